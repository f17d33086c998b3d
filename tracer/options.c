/* tracer/options.c: parses `corral run` options and the request document into
 * one run configuration; every bad input is an error that names itself. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tracer.h"
#include "io/io.h"

enum {
	OPT_POLICY = 256, OPT_CLASS, OPT_RO, OPT_RW, OPT_EXEC, OPT_ALLOW_NET,
	OPT_LIMIT, OPT_ENV, OPT_INPUT, OPT_OUTPUT, OPT_OUTPUT_DIR, OPT_JSON,
	OPT_RESULT, OPT_AUDIT, OPT_ID, OPT_REQUEST, OPT_HELP, OPT_STACKS,
	OPT_PUBLISH, OPT_OUTPUT_OVERWRITE, OPT_REQUIRE, OPT_WS_UNSAFE,
	OPT_LANDLOCK, OPT_STRICT_METADATA, OPT_FAST_OPEN, OPT_NO_DATA_BACKSTOP,
};

static const struct option longopts[] = {
	{ "workspace", required_argument, NULL, 'w' },
	{ "workspace-unsafe", no_argument, NULL, OPT_WS_UNSAFE },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "class", required_argument, NULL, OPT_CLASS },
	{ "ro", required_argument, NULL, OPT_RO },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "exec", required_argument, NULL, OPT_EXEC },
	{ "allow-net", required_argument, NULL, OPT_ALLOW_NET },
	{ "publish", required_argument, NULL, OPT_PUBLISH },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "input", required_argument, NULL, OPT_INPUT },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "output-overwrite", no_argument, NULL, OPT_OUTPUT_OVERWRITE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "result", required_argument, NULL, OPT_RESULT },
	{ "audit", required_argument, NULL, OPT_AUDIT },
	{ "id", required_argument, NULL, OPT_ID },
	{ "request", required_argument, NULL, OPT_REQUEST },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "stacks", no_argument, NULL, OPT_STACKS },
	{ "require", required_argument, NULL, OPT_REQUIRE },
	{ "landlock", required_argument, NULL, OPT_LANDLOCK },
	{ "strict-metadata", no_argument, NULL, OPT_STRICT_METADATA },
	{ "fast-open", no_argument, NULL, OPT_FAST_OPEN },
	{ "no-data-backstop", no_argument, NULL, OPT_NO_DATA_BACKSTOP },
	{ NULL, 0, NULL, 0 },
};

static const char usage[] =
	"usage: corral run [OPTIONS] -- COMMAND [ARG...]\n"
	"       corral run --request FILE [OPTIONS]\n"
	"options: -w/--workspace DIR, --workspace-unsafe, --policy FILE,\n"
	"  --class NAME, --ro PATH, --rw PATH, --exec PATH, --allow-net DEST,\n"
	"  --publish PORT, --limit NAME=VALUE, --env NAME[=VALUE],\n"
	"  --input SRC[:DEST], --output GLOB, --output-dir DIR, --output-overwrite,\n"
	"  --json, --result FILE, --audit FILE, --id ID, --request FILE, --stacks,\n"
	"  --require LEVEL (full: refuse to start without every protection),\n"
	"  --landlock=auto|off|require, --strict-metadata, --fast-open,\n"
	"  --no-data-backstop (sanitizer builds: no RLIMIT_DATA)\n";

#define bad(err, len, ...) (cr_errf(err, len, __VA_ARGS__), -EINVAL)

/* --publish PORT: a loopback port of the run that other local users may
 * connect to (docs/network.md). */
static int push_port(struct cr_run_config *cfg, const char *s, char *err,
		     size_t errlen)
{
	unsigned long v = 0;
	uint16_t *p;
	size_t i;

	for (i = 0; s[i] >= '0' && s[i] <= '9' && i < 6; i++)
		v = v * 10 + (unsigned long)(s[i] - '0');
	if (!i || s[i] || v < 1 || v > 65535)
		return bad(err, errlen, "--publish %s: expected a port, 1-65535", s);
	p = realloc(cfg->publish, (cfg->npublish + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	cfg->publish = p;
	cfg->publish[cfg->npublish++] = (uint16_t)v;
	return 0;
}

/* Parsed options that the run configuration does not keep verbatim. */
struct cr_cli {
	const char *workspace;
	const char *request_file;
	const char *class_name;
	const char *id;
	struct cr_strlist limits;	/* NAME=VALUE */
	struct cr_strlist envs;		/* NAME[=VALUE] */
	int landlock;		/* -1: the class's */
	bool strict_metadata;
	bool fast_open;
	bool no_data_backstop;
};

static int load_request(struct cr_run_config *cfg, const char *file,
			char *err, size_t errlen)
{
	cr_autofree char *text = NULL;
	size_t len;
	int rc = cr_read_file(file, 1u << 20, &text, &len);

	if (rc) {
		cr_errf(err, errlen, "%s: cannot read: %s", file, strerror(-rc));
		return -EINVAL;
	}
	cr_sha256_buf(text, len, cfg->request_sha256);	/* as read */
	return cr_request_parse(text, len, file, &cfg->req, err, errlen);
}

static int load_policy(struct cr_run_config *cfg, char *err, size_t errlen)
{
	cr_autofree char *text = NULL;
	size_t len;
	int rc;

	if (!cfg->policy_file) {
		cr_sha256_buf(cr_default_policy_json,
			      strlen(cr_default_policy_json), cfg->policy_sha256);
		return cr_policy_parse(cr_default_policy_json,
				       strlen(cr_default_policy_json),
				       "policy/default.json", &cfg->policy,
				       err, errlen);
	}
	rc = cr_read_file(cfg->policy_file, 1u << 20, &text, &len);
	if (rc) {
		cr_errf(err, errlen, "%s: cannot read: %s", cfg->policy_file,
			strerror(-rc));
		return -EINVAL;
	}
	cr_sha256_buf(text, len, cfg->policy_sha256);
	return cr_policy_parse(text, len, cfg->policy_file, &cfg->policy, err,
			       errlen);
}

static int apply_limit(struct cr_run_config *cfg, const char *arg, char *err,
		       size_t errlen)
{
	char name[32];
	const char *eq = strchr(arg, '=');
	uint64_t v;
	int id, rc;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(name))
		return bad(err, errlen, "--limit %s: expected NAME=VALUE", arg);
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = 0;
	id = cr_limit_lookup(name);
	if (id < 0)
		return bad(err, errlen,
			   "--limit %s: unknown budget (cpu, memory, wall, processes, output, disk, files, net-bytes, net-connections, net-conn-time)",
			   name);
	rc = cr_limit_parse_value((enum cr_limit_id)id, eq + 1, &v, err, errlen);
	if (rc) {
		char inner[256];

		snprintf(inner, sizeof(inner), "%s", err);
		cr_errf(err, errlen, "--limit %s: %s", arg, inner);
		return -EINVAL;
	}
	cfg->limits.v[id] = v;
	return 0;
}

static int check_root(const char *opt, const char *path, char *err,
		      size_t errlen)
{
	if (path[0] != '/') {
		cr_errf(err, errlen, "%s %s: must be an absolute path", opt, path);
		return -EINVAL;
	}
	return 0;
}

/* A file's name with its directory's real path: "./r.json" and "r.json"
 * alike, before either exists. NULL when the directory cannot be
 * resolved (the file's own open then says why). */
static char *real_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	cr_autofree char *dir = slash ? strndup(path, (size_t)(slash - path)) :
				strdup(".");
	cr_autofree char *real = NULL;
	char *out = NULL;

	if (!dir)
		return NULL;
	real = realpath(*dir ? dir : "/", NULL);
	if (!real || asprintf(&out, "%s/%s", real, slash ? slash + 1 : path) < 0)
		return NULL;
	return out;
}

static int check_input(const char *arg, char *err, size_t errlen)
{
	cr_autofree char *from = NULL;
	cr_autofree char *to = NULL;

	return cr_io_input_split(arg, &from, &to, err, errlen);
}

static int check_output(const char *glob, char *err, size_t errlen)
{
	char msg[256];

	if (cr_output_pattern_check(glob, msg, sizeof(msg)))
		return bad(err, errlen, "--output %s: %s", glob, msg);
	return 0;
}

/*
 * Returns 0 when the run may start, -EINVAL for a usage or document error
 * (exit 125) and -EPERM when the request asks more than its class (126).
 */
int cr_options_load(int argc, char **argv, struct cr_run_config *cfg,
		    char *err, size_t errlen, char ***env_args, size_t *nenv,
		    const char **workspace)
{
	struct cr_cli cli = { .landlock = -1 };
	const char *class_name;
	int c, rc = 0;

	optind = 1;
	opterr = 0;
	/* '+': stop at the first non-option, the command is the program's. */
	while ((c = getopt_long(argc, argv, "+w:", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			/* An unset "-w $WS" would make corral's own working
			 * directory the writable workspace (found by a
			 * probing session): refused, as an empty root. */
			if (!optarg[0]) {
				cr_errf(err, errlen, "-w/--workspace: must not be empty");
				rc = -EINVAL;
				break;
			}
			cli.workspace = optarg;
			break;
		case OPT_WS_UNSAFE: cfg->ws_unsafe = true; break;
		case OPT_POLICY: cfg->policy_file = optarg; break;
		case OPT_CLASS: cli.class_name = optarg; break;
		case OPT_RO:
			rc = check_root("--ro", optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->extra_ro, optarg);
			break;
		case OPT_RW:
			rc = check_root("--rw", optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->extra_rw, optarg);
			break;
		case OPT_EXEC:
			rc = check_root("--exec", optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->extra_exec, optarg);
			break;
		case OPT_ALLOW_NET:
			rc = cr_net_dest_validate(optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->allow_net, optarg);
			break;
		case OPT_PUBLISH:
			rc = push_port(cfg, optarg, err, errlen);
			break;
		case OPT_LIMIT: rc = cr_strlist_push(&cli.limits, optarg); break;
		case OPT_ENV: rc = cr_strlist_push(&cli.envs, optarg); break;
		case OPT_INPUT:
			rc = check_input(optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->inputs, optarg);
			break;
		case OPT_OUTPUT:
			rc = check_output(optarg, err, errlen);
			if (!rc)
				rc = cr_strlist_push(&cfg->outputs, optarg);
			break;
		case OPT_OUTPUT_DIR: cfg->output_dir = optarg; break;
		case OPT_OUTPUT_OVERWRITE: cfg->output_overwrite = true; break;
		case OPT_JSON: cfg->json = true; break;
		case OPT_STACKS: cfg->stacks = true; break;
		case OPT_LANDLOCK:
			cli.landlock = cr_landlock_mode_parse(optarg);
			if (cli.landlock < 0)
				rc = bad(err, errlen,
					 "--landlock %s: expected auto, off or require",
					 optarg);
			break;
		case OPT_STRICT_METADATA: cli.strict_metadata = true; break;
		case OPT_FAST_OPEN: cli.fast_open = true; break;
		case OPT_NO_DATA_BACKSTOP: cli.no_data_backstop = true; break;
		case OPT_RESULT: cfg->result_file = optarg; break;
		case OPT_AUDIT: cfg->audit_file = optarg; break;
		case OPT_ID: cli.id = optarg; break;
		case OPT_REQUIRE:
			if (!cr_assurance_level_valid(optarg)) {
				cr_errf(err, errlen,
					"--require %s: expected full or degraded",
					optarg);
				rc = -EINVAL;
			}
			cfg->require = optarg;
			break;
		case OPT_REQUEST: cli.request_file = optarg; break;
		case OPT_HELP:
			fputs(usage, stdout);
			rc = -ECANCELED;
			break;
		default:
			cr_errf(err, errlen, "unknown or incomplete option %s\n%s",
				argv[optind - 1], usage);
			rc = -EINVAL;
			break;
		}
		if (rc)
			goto out;
	}
	/* Known even when the run is refused: the audit path is judged
	 * against it. */
	*workspace = cli.workspace;

	/* The result would replace the whole trail (found by a probing
	 * session): one file cannot be both. Compared by name, and by inode
	 * when both exist. */
	if (cfg->result_file && cfg->audit_file) {
		struct stat ra, aa;
		cr_autofree char *rp = real_name(cfg->result_file);
		cr_autofree char *ap = real_name(cfg->audit_file);

		if (!strcmp(cfg->result_file, cfg->audit_file) ||
		    (rp && ap && !strcmp(rp, ap)) ||
		    (stat(cfg->result_file, &ra) == 0 &&
		     stat(cfg->audit_file, &aa) == 0 &&
		     ra.st_dev == aa.st_dev && ra.st_ino == aa.st_ino)) {
			cr_errf(err, errlen,
				"--result and --audit name the same file");
			rc = -EINVAL;
			goto out;
		}
	}
	rc = load_policy(cfg, err, errlen);
	if (rc)
		goto out;
	if (cli.request_file) {
		cfg->request_file = cli.request_file;
		rc = load_request(cfg, cli.request_file, err, errlen);
		if (rc)
			goto out;
		if (optind < argc) {
			cr_errf(err, errlen,
				"give the command either after -- or in the request, not both");
			rc = -EINVAL;
			goto out;
		}
		cfg->argv = cfg->req->command;
		cfg->cwd = cfg->req->cwd;
		if (cfg->req->stdin_text) {
			cfg->stdin_text = cfg->req->stdin_text;
			cfg->stdin_len = cfg->req->stdin_len;
		}
	} else {
		if (optind >= argc) {
			cr_errf(err, errlen, "no command given\n%s", usage);
			rc = -EINVAL;
			goto out;
		}
		cfg->argv = &argv[optind];
	}

	class_name = cli.class_name ? cli.class_name :
		     cfg->req && cfg->req->class_name ? cfg->req->class_name :
		     "default";
	cfg->cls = cr_policy_class(cfg->policy, class_name);
	if (!cfg->cls) {
		cr_errf(err, errlen, "%s: no class \"%s\" in the policy",
			cfg->policy_file ? cfg->policy_file : "the built-in policy",
			class_name);
		rc = -EINVAL;
		goto out;
	}
	cfg->limits = cfg->cls->limits;
	/* Artifacts go nowhere but where the operator says. */
	if ((cfg->outputs.n || (cfg->req && cfg->req->outputs.n)) &&
	    !cfg->output_dir) {
		cr_errf(err, errlen, "%s need --output-dir DIR",
			cfg->outputs.n ? "--output" : "the request's outputs");
		rc = -EINVAL;
		goto out;
	}
	/* The operator's option wins over the class; the request cannot
	 * touch either (it is the agent's data). */
	cfg->landlock = cli.landlock >= 0 ? (enum cr_landlock_mode)cli.landlock :
			cfg->cls->landlock;
	cfg->strict_metadata = cli.strict_metadata || cfg->cls->fs_strict_metadata;
	cfg->fast_open = cli.fast_open || cfg->cls->fs_fast_open;
	cfg->data_backstop = !cli.no_data_backstop && !cfg->cls->no_data_backstop;

	if (cli.id && !cr_task_id_valid(cli.id)) {
		cr_errf(err, errlen,
			"--id %s: ids are 1-64 characters of [A-Za-z0-9._-], not starting with . or -",
			cli.id);
		rc = -EINVAL;
		goto out;
	}
	cfg->task_id = strdup(cli.id ? cli.id :
			      cfg->req && cfg->req->id ? cfg->req->id : "");
	if (!cfg->task_id) {
		rc = -ENOMEM;
		goto out;
	}
	if (!cfg->task_id[0]) {
		free(cfg->task_id);
		cfg->task_id = cr_task_id_new();
		if (!cfg->task_id) {
			cr_errf(err, errlen, "cannot make a task id");
			rc = -EIO;
			goto out;
		}
	}

	/* The operator's --limit may set any value; the request (the agent's
	 * data) may only narrow the class. */
	for (size_t i = 0; i < cli.limits.n; i++) {
		rc = apply_limit(cfg, cli.limits.v[i], err, errlen);
		if (rc)
			goto out;
	}
	if (cfg->req) {
		/* The class as the operator raised it: a request asking 90s
		 * of a `--limit wall=120s` run over a 1m class was refused
		 * (found by a probing session). A lowered limit still caps
		 * what the request gets, below. */
		struct cr_class eff = *cfg->cls;

		for (int i = 0; i < CR_LIM__COUNT; i++)
			if (cfg->limits.v[i] > eff.limits.v[i])
				eff.limits.v[i] = cfg->limits.v[i];
		rc = cr_request_narrows(cfg->req, &eff, err, errlen);
		if (rc)
			goto out;
		for (int i = 0; i < CR_LIM__COUNT; i++)
			if ((cfg->req->limits_set & (1u << i)) &&
			    cfg->req->limits.v[i] < cfg->limits.v[i])
				cfg->limits.v[i] = cfg->req->limits.v[i];
	}
	/* Credentials by name or value: warned about, or refused (policy
	 * denied, nothing runs) when the class says so. */
	rc = cr_secrets_check_env(cfg, cli.envs.v, cli.envs.n, err, errlen);
	if (rc)
		goto out;
	*env_args = cli.envs.v;
	*nenv = cli.envs.n;
	cli.envs.v = NULL;
	cli.envs.n = 0;
out:
	cr_strlist_free(&cli.limits);
	cr_strlist_free(&cli.envs);
	return rc;
}

void cr_config_free(struct cr_run_config *cfg)
{
	cr_policy_free(cfg->policy);
	cr_request_free(cfg->req);
	free(cfg->task_id);
	free(cfg->workspace);
	if (cfg->result_dirfd >= 0)
		close(cfg->result_dirfd);
	if (cfg->ws_lockfd >= 0)
		close(cfg->ws_lockfd);
	if (cfg->ws_fd >= 0)
		close(cfg->ws_fd);
	if (cfg->envp) {
		for (char **e = cfg->envp; *e; e++)
			free(*e);
		free(cfg->envp);
	}
	for (size_t i = 0; i < cfg->npins; i++) {
		free(cfg->pins[i].given);
		free(cfg->pins[i].real);
		if (cfg->pins[i].fd >= 0)
			close(cfg->pins[i].fd);
	}
	free(cfg->pins);
	cr_strlist_free(&cfg->extra_ro);
	cr_strlist_free(&cfg->extra_rw);
	cr_strlist_free(&cfg->extra_exec);
	cr_strlist_free(&cfg->allow_net);
	cr_strlist_free(&cfg->inputs);
	cr_strlist_free(&cfg->outputs);
	free(cfg->publish);
	cfg->publish = NULL;
	cfg->npublish = 0;
	memset(cfg, 0, sizeof(*cfg));
}
