/* tracer/broker/curlapi.c: resolves the broker's libcurl calls at run time,
 * so runs without credentials never load libcurl and what it pulls in. */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../tracer.h"
#include "curlapi.h"

struct cr_curlapi cr_curl;

int cr_curlapi_load(char *err, size_t errlen)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f, n) { n, offsetof(struct cr_curlapi, f) }
		SYM(global_init, "curl_global_init"),
		SYM(easy_init, "curl_easy_init"),
		SYM(easy_setopt, "curl_easy_setopt"),
		SYM(easy_perform, "curl_easy_perform"),
		SYM(easy_getinfo, "curl_easy_getinfo"),
		SYM(easy_cleanup, "curl_easy_cleanup"),
		SYM(easy_strerror, "curl_easy_strerror"),
		SYM(slist_append, "curl_slist_append"),
		SYM(slist_free_all, "curl_slist_free_all"),
#undef SYM
	};
	static void *lib;

	if (lib)
		return 0;
	lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		cr_errf(err, errlen, "cannot load libcurl.so.4 (Debian libcurl4): %s",
			dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < CR_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(lib, syms[i].name);

		if (!f) {
			cr_errf(err, errlen, "libcurl.so.4 lacks %s", syms[i].name);
			dlclose(lib);
			lib = NULL;
			return -ENOENT;
		}
		memcpy((char *)&cr_curl + syms[i].off, &f, sizeof(f));
	}
	return 0;
}
