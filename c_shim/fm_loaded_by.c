/*
 * A plugin built for one Slurm release and loaded by another says so, in
 * slurmctld's log, naming both releases.
 *
 * Slurm refuses such a plugin itself: it compares plugin_version with its
 * own release before it calls init(). Its log line names only the
 * plugin's release. (The plugin is linked for lazy binding, see build.rs,
 * so a function the other release lacks does not fail dlopen() first; a
 * missing data symbol still would, before this runs.) This constructor runs inside dlopen(), before that check, and
 * asks the host's libslurm for its API version, which changes with every
 * release series. A mismatch within a series (another micro release) is
 * left to Slurm's line and slurmctld's own "version X started".
 */

#include <dlfcn.h>

#include "fm_slurm.h"

/* libslurm's API_CURRENT of each release series (its META file). */
static const struct {
	long api;
	const char *series;
} series_of_api[] = {
	{ 38, "22.05" }, { 39, "23.02" }, { 40, "23.11" }, { 41, "24.05" },
	{ 42, "24.11" }, { 43, "25.05" }, { 44, "25.11" }, { 45, "26.05" },
};

__attribute__((constructor)) static void _check_host_release(void)
{
	/* Looked up, not linked: outside slurmctld (or in a Slurm without
	 * it) there is nothing to check. */
	long (*host_api)(void) =
		(long (*)(void)) dlsym(RTLD_DEFAULT, "slurm_api_version");
	if (!host_api || !dlsym(RTLD_DEFAULT, "slurm_error"))
		return;
	long host = SLURM_VERSION_MAJOR(host_api());
	long ours = SLURM_VERSION_MAJOR(SLURM_API_VERSION);
	if (host == ours)
		return;
	char unknown[32];
	const char *name = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(series_of_api); i++)
		if (series_of_api[i].api == host)
			name = series_of_api[i].series;
	if (!name) {
		snprintf(unknown, sizeof(unknown), "of API %ld", host);
		name = unknown;
	}
	error("fairmatch: this sched_fairmatch.so was built for Slurm %s, but this slurmctld runs Slurm %s: Slurm will refuse it; rebuild it against this Slurm's source (scripts/build-plugin.sh, README \"Slurm releases\")",
	      SLURM_VERSION_STRING, name);
}

/* Also what links this file into the plugin: an archive member nothing
 * refers to is left out, constructor and all. */
const char *fm_built_for(void)
{
	return SLURM_VERSION_STRING;
}
