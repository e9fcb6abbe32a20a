/*
 * source/s3.h - what only the S3 transport (s3.c) and its tests use:
 * where an object in a store is and with what credentials it is asked
 * for (s3place.c), and what a store's XML answers say (s3xml.c).
 */
#ifndef SV_S3_H
#define SV_S3_H

#include "source/remote.h"

/* Where an S3 object is, and with what credentials. */
#define SV_S3_PART (16ull << 20) /* an upload's part; larger objects go in parts */
struct sv_s3_place {
	char *bucket, *key;      /* as given */
	char *bucket_url;        /* the bucket's URL, ending in '/' */
	char *url;               /* the object's (its key encoded) */
	char *user, *secret;     /* the access key and secret, or NULL: anonymous */
	char *token;             /* a session token, or NULL */
	char region[64];
	char profile[64];        /* the profile looked in for credentials */
	char sigv4[96];          /* libcurl's CURLOPT_AWS_SIGV4: "aws:amz:REGION:s3" */
	uint64_t part;           /* the multipart upload's part size */
};
/* The place of location s3://BUCKET/KEY: the -o s3_* options among opts,
 * then the environment (AWS_ENDPOINT_URL[_S3], AWS_REGION,
 * AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, AWS_PROFILE), then ~/.aws/credentials and
 * ~/.aws/config. */
int sv_s3_place(const char *location, const char *opts, struct sv_s3_place *p,
		struct sv_err *err);
void sv_s3_place_fini(struct sv_s3_place *p);
/* Appends s percent-encoded as S3 signs it: every byte but the unreserved
 * ones, and but '/' if slash (a key in a path; a query's value encodes
 * it). */
int sv_s3_encode(struct sv_buf *b, const char *s, bool slash);
/* "Code: Message" of an S3 error body ("" if it is not one). */
void sv_s3_error_text(const char *body, size_t n, char *out, size_t cap);
/* The text of the first <tag> in an XML body ("" if none). */
void sv_s3_xml_text(const char *body, size_t n, const char *tag, char *out, size_t cap);
/* One page of a ListObjectsV2 answer: fn(arg, entry) for each object
 * directly under prefix, then each prefix under it (with a delimiter), in
 * the page's order, until fn returns non-zero (returned).  *more and next
 * (the continuation token, unescaped) when the listing goes on; *why says
 * what is wrong with a page that cannot go on (NULL if nothing). */
int sv_s3_list_page(const char *body, size_t n, const char *prefix,
		    int (*fn)(void *arg, const struct sv_remote_entry *e), void *arg, bool *more,
		    char *next, size_t cap, const char **why);

#endif
