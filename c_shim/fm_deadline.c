/*
 * A job's --deadline, as Slurm's own schedulers hold it (deadline_ok() and
 * the time limit cut in job_scheduler.c and backfill.c). The caller holds
 * the cycle locks.
 *
 * Slurm gives a deadline job with no time limit a minimum run of one
 * minute at submission. A job whose shortest run cannot end by its
 * deadline is never started. It stays pending, its reason saying so,
 * while the user may still move the deadline (scontrol update
 * Deadline=); once the deadline has passed, deadline_ok() cancels it as
 * Slurm's schedulers would (from 23.11.4 Slurm's job purge also does,
 * every minute). A job that can end in time is started with its time
 * limit cut to the whole minutes left, so it cannot run past the
 * deadline.
 */

#include "fm_slurm.h"

static bool _set(uint32_t minutes)
{
	return minutes != NO_VAL && minutes != INFINITE;
}

static bool _has_deadline(job_record_t *job_ptr)
{
	return job_ptr->deadline && job_ptr->deadline != NO_VAL;
}

static bool _missed(job_record_t *job_ptr)
{
	if (!_has_deadline(job_ptr))
		return false;
	uint32_t shortest = job_ptr->time_min;
	if (!shortest || shortest == NO_VAL)
		shortest = job_ptr->time_limit;
	time_t end = time(NULL);
	if (_set(shortest))
		end += (time_t) shortest * 60;
	return job_ptr->deadline < end;
}

bool fm_deadline_blocks(job_record_t *job_ptr)
{
	if (!_missed(job_ptr))
		return false;
	/* Cancelled once: a job tried in several partitions comes back. */
	if (!IS_JOB_PENDING(job_ptr))
		return true;
	if (job_ptr->deadline <= time(NULL)) {
		(void) deadline_ok(job_ptr, "fairmatch");
	} else if (job_ptr->state_reason != FAIL_DEADLINE ||
		   job_ptr->state_desc) {
		job_ptr->state_reason = FAIL_DEADLINE;
		xfree(job_ptr->state_desc);
		last_job_update = time(NULL);
	}
	return true;
}

uint32_t fm_deadline_limit(job_record_t *job_ptr, part_record_t *part_ptr)
{
	time_t now = time(NULL);
	if (!_has_deadline(job_ptr) || job_ptr->deadline <= now)
		return 0;
	uint32_t left = (job_ptr->deadline - now) / 60;
	uint32_t limit = job_ptr->time_limit;
	if (!_set(limit) && part_ptr)
		limit = _set(part_ptr->default_time) ? part_ptr->default_time :
						       part_ptr->max_time;
	return _set(limit) ? MIN(left, limit) : left;
}
