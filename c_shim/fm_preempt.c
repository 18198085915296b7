/*
 * Preemption through Slurm's own requeue (docs/operations.md, "Preemption").
 * The caller holds the cycle locks. Rust chooses the jobs, only among
 * those that opted in and that Slurm may requeue; here each is either
 * sent the signal of its --signal (the requeue follows in a later cycle,
 * once its notice is over) or requeued now. A requeue is Slurm's, as
 * `scontrol requeue` does it with preemption's accounting: the job is
 * recorded PREEMPTED, gets SIGTERM and KillWait to end, and waits again
 * (from `now + cred_expire`, Slurm's rule) with its id, its restart count
 * raised by one.
 */

#include "fm_slurm.h"

static uint32_t requeued_unsaved = 0;

uint32_t fm_requeued_unsaved(void)
{
	return requeued_unsaved;
}

void fm_requeues_saved(void)
{
	requeued_unsaved = 0;
}

static bool _preemptible(job_record_t *job_ptr)
{
	return IS_JOB_RUNNING(job_ptr) && !IS_JOB_COMPLETING(job_ptr) &&
	       job_ptr->batch_flag && job_ptr->details &&
	       job_ptr->details->requeue && fm_managed(job_ptr);
}

static void _refused(fm_outcome_t *o, const char *why)
{
	o->result = FM_REFUSED;
	strlcpy(o->reason, why, sizeof(o->reason));
}

void fm_preempt(const fm_decision_t *dec, fm_outcome_t *o)
{
	job_record_t *job_ptr = find_job_record(dec->job_id);
	if (!job_ptr || !_preemptible(job_ptr)) {
		_refused(o, "no longer running, or not requeueable");
		return;
	}
	o->result = FM_STARTED;
	if (dec->notice) {
		info("fairmatch: preempting %pJ: signal %u now, requeue after its notice",
		     job_ptr, job_ptr->warn_signal);
		send_job_warn_signal(job_ptr, true);
		return;
	}
	int rc = fm_job_requeue(job_ptr);
	if (rc == SLURM_SUCCESS) {
		requeued_unsaved++;
		info("fairmatch: preempted %pJ: requeued", job_ptr);
	} else {
		_refused(o, slurm_strerror(rc));
		info("fairmatch: %pJ not preempted: %s", job_ptr, o->reason);
	}
}
