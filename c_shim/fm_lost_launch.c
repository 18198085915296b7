/*
 * Batch launches lost to a crash of slurmctld.
 *
 * fairmatch writes the job state file before it launches the scripts of
 * the jobs it allocated (fm_launch_deferred), so that no script runs twice.
 * A controller killed between the two restarts with those jobs RUNNING on
 * nodes that never got their scripts. Slurm requeues such a job itself
 * (_purge_missing_jobs) once its batch node registers more than
 * BatchStartTimeout after the restart, but after the registrations of the
 * restart itself a node registers only every 20 pings (200 s with
 * SlurmdTimeout=30, over half an hour with the default 300), and the job
 * holds its nodes idle all that time. So the agent notes, before its first
 * cycle starts anything, the batch jobs the state file holds as started in
 * the last minute; once that grace has passed, it asks the batch nodes of
 * those still running as they were to register. Slurm's own rule then
 * requeues a job whose script is missing, and only confirms one whose
 * script runs. Nothing is relaunched here: a second launch of a script
 * that runs makes slurmd ask for the job's requeue.
 */

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fm_slurm.h"

/* A lost launch belongs to a start made just before the crash: a script
 * is launched within the cycle that allocated it, milliseconds later. A
 * minute leaves room for a save that took long. */
#define LOST_LAUNCH_WINDOW 60

/* Agent thread only: the jobs noted at its start, and when to ask. */
static fm_noted_jobs_t suspects = { 0 };
static time_t check_at = 0;

/* A batch job running on a node, as Slurm's purge tests them. */
static bool _runs_a_script(job_record_t *job_ptr)
{
	return IS_JOB_RUNNING(job_ptr) && !IS_JOB_CONFIGURING(job_ptr) &&
	       job_ptr->batch_flag && !job_ptr->het_job_offset &&
	       job_ptr->batch_host;
}

void fm_lost_launch_note(void)
{
	/* Waits for the job state to be loaded: slurmctld holds its locks
	 * while it reads slurm.conf and the state files (22.05 inits this
	 * plugin first). */
	slurmctld_lock_t job_read = { .job = READ_LOCK };
	lock_slurmctld(job_read);
	time_t now = time(NULL);
	suspects.n = 0;
	list_itr_t *it = list_iterator_create(job_list);
	job_record_t *job_ptr;
	while ((job_ptr = list_next(it))) {
		if (!_runs_a_script(job_ptr) ||
		    job_ptr->start_time < now - LOST_LAUNCH_WINDOW)
			continue;
		fm_noted_jobs_add(&suspects, job_ptr);
	}
	list_iterator_destroy(it);
	unlock_slurmctld(job_read);
	/* _purge_missing_jobs' own grace from the load (which set each
	 * job's time_last_active), plus slack for its whole-second times. */
	check_at = now + slurm_conf.batch_start_timeout +
		   MIN(DEFAULT_MSG_TIMEOUT, slurm_conf.msg_timeout) + 3;
}

size_t fm_lost_launch_check(time_t now)
{
	if (!suspects.n || now < check_at)
		return 0;
	slurmctld_lock_t locks = { .job = READ_LOCK, .node = READ_LOCK };
	agent_arg_t *args = xmalloc(sizeof(*args));
	args->msg_type = REQUEST_NODE_REGISTRATION_STATUS;
	args->protocol_version = SLURM_PROTOCOL_VERSION;
	args->hostlist = hostlist_create(NULL);

	lock_slurmctld(locks);
	for (size_t i = 0; i < suspects.n; i++) {
		job_record_t *job_ptr = fm_noted_job(&suspects, i);
		/* Ended, requeued or seen by Slurm meanwhile: not ours to ask
		 * about. */
		if (!job_ptr || !_runs_a_script(job_ptr))
			continue;
		node_record_t *node_ptr = find_node_record(job_ptr->batch_host);
		if (!node_ptr || IS_NODE_DOWN(node_ptr) ||
		    IS_NODE_NO_RESPOND(node_ptr))
			continue;
		if (args->protocol_version > node_ptr->protocol_version)
			args->protocol_version = node_ptr->protocol_version;
		hostlist_push_host(args->hostlist, job_ptr->batch_host);
		args->node_count++;
	}
	unlock_slurmctld(locks);
	xfree(suspects.at);
	suspects.n = suspects.cap = 0;

	if (!args->node_count) {
		hostlist_destroy(args->hostlist);
		xfree(args);
		return 0;
	}
	hostlist_uniq(args->hostlist);
	size_t nodes = hostlist_count(args->hostlist);
	args->node_count = nodes;
	char *names = hostlist_ranged_string_xmalloc(args->hostlist);
	info("fairmatch: asking %s to register: batch jobs the previous controller started there just before it stopped have not been seen running (Slurm requeues any whose script is missing)",
	     names);
	xfree(names);
	/* The agent ends every registration request with ping_end(). */
	ping_begin();
	set_agent_arg_r_uid(args, SLURM_AUTH_UID_ANY);
	agent_queue_request(args);
	return nodes;
}

void fm_fault_crash_before_launch(size_t scripts)
{
	static int armed = -1;
	if (armed < 0) {
		const char *fault = getenv("FAIRMATCH_FAULT");
		armed = fault && !strcmp(fault, "crash-before-launch");
	}
	if (!scripts || !armed)
		return;
	error("fairmatch: injected fault (FAIRMATCH_FAULT=crash-before-launch): slurmctld dies with %zu batch scripts saved as started and not launched",
	      scripts);
	kill(getpid(), SIGKILL);
}
