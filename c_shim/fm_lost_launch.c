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
 * holds its nodes idle all that time. So once that grace has passed, the
 * batch nodes of the jobs started shortly before the restart are asked to
 * register: Slurm's own rule then requeues a job whose script is missing,
 * and a job whose script runs is only confirmed.
 */

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fm_slurm.h"

/* A lost launch belongs to a start made just before the crash: a script
 * is launched within the cycle that allocated it, milliseconds later. A
 * minute leaves room for a save that took long. */
#define LOST_LAUNCH_WINDOW 60

time_t fm_lost_launch_check_at(time_t started)
{
	/* _purge_missing_jobs' own grace, counted from the loading of the
	 * job state (which set time_last_active, and which 22.05 does after
	 * this plugin's init), plus slack for its whole-second times. */
	return started + slurm_conf.batch_start_timeout +
	       MIN(DEFAULT_MSG_TIMEOUT, slurm_conf.msg_timeout) + 3;
}

size_t fm_lost_launch_check(time_t started)
{
	slurmctld_lock_t locks = { .job = READ_LOCK, .node = READ_LOCK };
	agent_arg_t *args = xmalloc(sizeof(*args));
	args->msg_type = REQUEST_NODE_REGISTRATION_STATUS;
	args->protocol_version = SLURM_PROTOCOL_VERSION;
	args->hostlist = hostlist_create(NULL);

	lock_slurmctld(locks);
	list_itr_t *it = list_iterator_create(job_list);
	job_record_t *job_ptr;
	while ((job_ptr = list_next(it))) {
		/* The jobs started in the minute before this controller came
		 * up whose scripts run on a node, as Slurm's purge tests them;
		 * those the registrations since have seen running are asked
		 * about again, which only confirms them. */
		if (!IS_JOB_RUNNING(job_ptr) || IS_JOB_CONFIGURING(job_ptr) ||
		    !job_ptr->batch_flag || job_ptr->het_job_offset ||
		    !job_ptr->batch_host ||
		    job_ptr->start_time < started - LOST_LAUNCH_WINDOW ||
		    job_ptr->start_time > started)
			continue;
		node_record_t *node_ptr = find_node_record(job_ptr->batch_host);
		if (!node_ptr)
			continue;
		if (args->protocol_version > node_ptr->protocol_version)
			args->protocol_version = node_ptr->protocol_version;
		hostlist_push_host(args->hostlist, job_ptr->batch_host);
		args->node_count++;
	}
	list_iterator_destroy(it);
	unlock_slurmctld(locks);

	if (!args->node_count) {
		hostlist_destroy(args->hostlist);
		xfree(args);
		return 0;
	}
	hostlist_uniq(args->hostlist);
	size_t nodes = hostlist_count(args->hostlist);
	args->node_count = nodes;
	char *names = hostlist_ranged_string_xmalloc(args->hostlist);
	info("fairmatch: asking %s to register: batch jobs started there just before this controller came up have not been seen running (Slurm requeues any whose script is missing)",
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
	const char *fault = getenv("FAIRMATCH_FAULT");
	if (!scripts || !fault || strcmp(fault, "crash-before-launch"))
		return;
	error("fairmatch: injected fault (FAIRMATCH_FAULT=crash-before-launch): slurmctld dies with %zu batch scripts saved as started and not launched",
	      scripts);
	kill(getpid(), SIGKILL);
}
