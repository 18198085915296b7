/*
 * fairmatch's SPANK plugin: runtime hints as sbatch, salloc and srun
 * options, listed in their --help and usable as #SBATCH lines:
 *
 *   sbatch --fm-runtime=gpu=20m,cpu=3h --fm-preemptible job.sh
 *
 * The option callback checks a value as soon as Slurm reads it (Rust's
 * hint grammar, fairmatch_rs_check_hint) and a bad one makes Slurm refuse
 * the submission (exit 255, "Invalid --fm-runtime argument"). After every
 * option is read, the hint goes into the job's SPANK environment as
 * FAIRMATCH_HINT=<body>, which slurmctld keeps in the job record, across
 * restarts and into array tasks; sched/fairmatch reads it there
 * (fm_snapshot.c) and it wins over a hint in --comment.
 *
 * The options begin with "fm-" so that no option of Slurm's (which wins
 * a clash and drops the plugin's) nor of a future release takes them.
 *
 * A cdylib exports only Rust symbols, so src/spank.rs exports
 * plugin_name, plugin_type, plugin_version and the slurm_spank_* entry
 * points, which forward here.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

/* Rust (src/spank.rs): 0 if `value` is a well-formed hint body, else
 * non-zero with the reason in `why`. */
extern int fairmatch_rs_check_hint(const char *value, char *why, size_t len);

#define HINT_ENV "FAIRMATCH_HINT"

/* The last --fm-runtime given (options may repeat; the last wins). */
static char *runtime;
static int preemptible;

static int _runtime(int val, const char *optarg, int remote)
{
	char why[256];
	(void) val;
	if (remote)
		return 0;
	if (!optarg || fairmatch_rs_check_hint(optarg, why, sizeof(why))) {
		slurm_error("fairmatch: --fm-runtime=%s: %s",
			    optarg ? optarg : "", optarg ? why : "no value");
		return -1;
	}
	free(runtime);
	runtime = strdup(optarg);
	return runtime ? 0 : -1;
}

static int _preemptible(int val, const char *optarg, int remote)
{
	(void) val;
	(void) optarg;
	if (!remote)
		preemptible = 1;
	return 0;
}

static struct spank_option options[] = {
	{ "fm-runtime", "flavor=time[,...]",
	  "fairmatch: the job's run time on each partition or GPU type, "
	  "e.g. gpu=20m,cpu=3h or a100=15m (units d, h, m, s); "
	  "wins over a hint in --comment",
	  1, 0, _runtime },
	{ "fm-preemptible", NULL,
	  "fairmatch: the job may be stopped and requeued for a job "
	  "past its waiting-time bound",
	  0, 0, _preemptible },
	SPANK_OPTIONS_TABLE_END
};

int fairmatch_spank_init(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	/* Registered where options are read (and in slurmstepd, so that a
	 * step given one does not warn of an unknown option). */
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
		break;
	default:
		return 0;
	}
	for (struct spank_option *o = options; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("fairmatch: cannot register --%s: %s",
				    o->name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int fairmatch_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (spank_context() != S_CTX_ALLOCATOR &&
	    spank_context() != S_CTX_LOCAL)
		return 0;
	if (!runtime && !preemptible)
		return 0;
	size_t n = (runtime ? strlen(runtime) : 0) + sizeof(" preemptible");
	char *hint = malloc(n);
	if (!hint)
		return -1;
	snprintf(hint, n, "%s%s%s", runtime ? runtime : "",
		 runtime && preemptible ? " " : "",
		 preemptible ? "preemptible" : "");
	spank_err_t rc = spank_job_control_setenv(sp, HINT_ENV, hint, 1);
	free(hint);
	if (rc != ESPANK_SUCCESS) {
		slurm_error("fairmatch: cannot pass the hint to slurmctld: %s",
			    spank_strerror(rc));
		return -1;
	}
	return 0;
}
