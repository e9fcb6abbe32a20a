# bash completion for savefs: commands, options, -o keys and their values
# (formats, event tables, S3 profiles from the AWS files), containers by
# their usual extensions, paths inside a container (for `savefs ls` and
# `savefs cat`, read with `savefs ls` itself) and savefs mount points (for
# `savefs umount`, read with `savefs mounts`).

# The profiles of the AWS files (credentials: [NAME]; config: [default],
# [profile NAME]).
_savefs_profiles()
{
	local f line
	for f in "${AWS_SHARED_CREDENTIALS_FILE:-$HOME/.aws/credentials}" \
		"${AWS_CONFIG_FILE:-$HOME/.aws/config}"; do
		[[ -r $f ]] || continue
		while IFS= read -r line; do
			[[ $line =~ ^[[:space:]]*\[(profile[[:space:]]+)?([^]]+)\] ]] &&
				printf '%s\n' "${BASH_REMATCH[2]}"
		done < "$f"
	done
}

_savefs_inside()
{
	# $1: the container, $2: the word so far ("chunks/0/1," ...)
	# (ls -l shows a directory's name with a / after it.)
	local dir= line out=()
	[[ $2 == */* ]] && dir=${2%/*}
	while IFS= read -r line; do
		line=${line#* }
		line=${line#"${line%%[! ]*}"}
		out+=("${dir:+$dir/}${line#* }")
	done < <(savefs ls -l -a "$1" "$dir" 2>/dev/null)
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "${out[*]}" -- "$2"))
	compopt -o nospace 2>/dev/null
}

_savefs()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	local containers='@(level|doodad|levelpack|map|nhgame|world|shipworld|chunks|player|dat|hcrp|metadata)'
	# Every key of savefs --help (tests/tools/checkman.py holds them to it),
	# and the FUSE ones it names.
	local okeys='ro cache= format= maxdecode= maxedit= max_open= readahead= events= spill= s3_endpoint= s3_region= s3_profile= s3_path_style= s3_part_size= noindex upgrade allow_other default_permissions max_threads= max_idle_threads= clone_fd nosuid nodev noexec fsname= auto_unmount'
	if [[ $prev == -o ]]; then
		local key=${cur##*,} head=
		[[ $cur == *,* ]] && head=${cur%,*},
		case $key in
		format=*)
			COMPREPLY=($(compgen -P "${head}format=" -W "$(savefs --formats 2>/dev/null | cut -d' ' -f1)" -- "${key#format=}")) ;;
		events=*)
			COMPREPLY=($(compgen -P "${head}events=" -W 'parkour builtin' -- "${key#events=}")) ;;
		s3_path_style=*)
			COMPREPLY=($(compgen -P "${head}s3_path_style=" -W '1 0' -- "${key#s3_path_style=}")) ;;
		s3_profile=*)
			local IFS=$'\n'
			COMPREPLY=($(compgen -P "${head}s3_profile=" -W "$(_savefs_profiles | sort -u)" -- "${key#s3_profile=}")) ;;
		*)
			COMPREPLY=($(compgen -P "$head" -W "$okeys" -- "$key")) ;;
		esac
		[[ ${COMPREPLY[0]:-} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	# The command (the first word that is not an option or its value).
	local i cmd= args=()
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -o ]]; then
			((i++))
			continue
		fi
		[[ ${words[i]} == -* ]] && continue
		[[ -z $cmd && ${#args[@]} -eq 0 ]] && case ${words[i]} in
			ls | cat | extract | info | diff | mounts | umount) cmd=${words[i]}; continue ;;
		esac
		args+=("${words[i]}")
	done
	if [[ $cur == -* ]]; then
		case $cmd in
		ls) COMPREPLY=($(compgen -W '-l -R -a -o' -- "$cur")) ;;
		extract) COMPREPLY=($(compgen -W '--force -o' -- "$cur")) ;;
		cat | info) COMPREPLY=($(compgen -W '-o' -- "$cur")) ;;
		umount) COMPREPLY=($(compgen -W '--all' -- "$cur")) ;;
		diff) COMPREPLY=($(compgen -W '--stat --name-only -o' -- "$cur")) ;;
		mounts) ;;
		*) COMPREPLY=($(compgen -W '-f -d -s -o --help --version --formats' -- "$cur")) ;;
		esac
		return
	fi
	if [[ -z $cmd && ${#args[@]} -eq 0 ]]; then
		COMPREPLY=($(compgen -W 'ls cat extract info diff mounts umount' -- "$cur"))
	fi
	case $cmd:${#args[@]} in
	mounts:*)
		return ;;
	umount:*)
		local IFS=$'\n'
		COMPREPLY=($(compgen -W "$(savefs mounts 2>/dev/null | cut -f1)" -- "$cur"))
		compopt -o filenames 2>/dev/null
		return ;;
	ls:1 | cat:1)
		_savefs_inside "${args[0]}" "$cur"
		return ;;
	extract:1 | :1)
		COMPREPLY+=($(compgen -d -- "$cur"))
		compopt -o filenames 2>/dev/null
		return ;;
	info:1 | ls:2 | cat:2 | extract:2 | diff:2 | :2)
		return ;;
	esac
	# A container: a file with a container's extension, any file with
	# -o format=, or a directory (a recording's, or to go into).
	local IFS=$'\n'
	shopt -s extglob
	COMPREPLY+=($(compgen -f -X "!*.$containers" -- "$cur") $(compgen -d -- "$cur"))
	compopt -o filenames 2>/dev/null
}
complete -F _savefs savefs
