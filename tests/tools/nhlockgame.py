#!/usr/bin/env python3
"""Stands in for a running NetHack 4 game's hold on its log, for tests.

  nhlockgame.py LOG REPORT

Holds a classic POSIX read lock on all of LOG (as the game does for its
whole life) and follows the engine's release protocol (libnethack files.c,
handle_sigrtmin1): a SIGRTMIN+0 or +1 sent with sigqueue asks it to let go;
it unlocks, answers the asker with SIGRTMIN+4, waits up to three seconds for
SIGRTMIN+2 or +3 ("done, lock again"), then takes its read lock again.
Each release is written to REPORT as one line:

  released for PID, relocked on signal|relocked on timeout

"locked" is written to REPORT once the first lock is held.  SIGTERM ends it.
"""
import fcntl
import os
import signal
import sys

RT = signal.SIGRTMIN
ASK = {RT + 0, RT + 1}
DONE = {RT + 2, RT + 3}
SI_QUEUE = -1


def main():
    log, report = sys.argv[1], sys.argv[2]
    sigs = ASK | DONE | {RT + 4, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    fd = os.open(log, os.O_RDONLY)
    fcntl.lockf(fd, fcntl.LOCK_SH)
    out = open(report, 'a', buffering=1)
    out.write('locked\n')
    while True:
        info = signal.sigwaitinfo(sigs)
        if info.si_signo == signal.SIGTERM:
            break
        if info.si_signo not in ASK or info.si_code != SI_QUEUE:
            continue
        fcntl.lockf(fd, fcntl.LOCK_UN)
        os.kill(info.si_pid, RT + 4)
        how = 'timeout'
        while True:
            got = signal.sigtimedwait(DONE | {signal.SIGTERM}, 3.0)
            if got is None:
                break
            if got.si_signo == signal.SIGTERM:
                return
            how = 'signal'
            break
        fcntl.lockf(fd, fcntl.LOCK_SH)
        out.write('released for %d, relocked on %s\n' % (info.si_pid, how))


if __name__ == '__main__':
    main()
