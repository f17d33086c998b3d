/* tracer/broker/curlapi.h: the few libcurl calls the broker makes, loaded
 * with dlopen on the first run that declares a credential. */
#ifndef CORRAL_BROKER_CURLAPI_H
#define CORRAL_BROKER_CURLAPI_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct cr_curlapi {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

extern struct cr_curlapi cr_curl;

/* 0 once every entry is resolved, else -ENOENT with the reason in err.
 * libcurl is not linked: its dependencies' constructors (GnuTLS through
 * librtmp, p11-kit) cost every run ~60 ms at start-up otherwise. */
int cr_curlapi_load(char *err, size_t errlen);

#endif
