//! Command-line arguments and dispatch.

mod bench;
mod bench_gangs;
mod bench_sim;
mod charts;
mod compare;
mod estimates;
mod generate;
mod import;
mod inputs;
mod queue;
mod report;
mod run_report;
mod simulate;
mod table;

use clap::{Parser, Subcommand, ValueEnum};
use fairmatch::solver::SolverKind;
use std::fmt;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "fairmatch",
    version,
    about = "Fair, heterogeneity-aware scheduling of ML jobs on mixed CPU/GPU clusters",
    long_about = "fairmatch decides, for every job, which kind of hardware it runs on and \
when, by an exact min-cost matching of jobs to (machine, position) slots (AlloX, EuroSys \
2020) with a fairness knob. `simulate` replays a workload under several policies and \
compares them; `bench` measures the matching solver."
)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a workload on a simulated cluster under one or more policies
    /// and print a comparison. With no arguments: the bundled AlloX testbed
    /// workload (40 jobs, 4 users) on 4 GPU and 8 CPU slots, under every
    /// policy.
    Simulate(SimulateArgs),
    /// Run several policies on one input, in parallel, and print one row
    /// per policy with its ratio to the best average JCT. Takes every input
    /// option of `simulate`.
    Compare(CompareArgs),
    /// Write a seeded synthetic workload (native CSV) and its cluster file:
    /// users with a mean slowdown per flavor each, log-uniform durations,
    /// Poisson arrivals at a target load. See docs/formats.md.
    Generate(GenerateArgs),
    /// Turn a site's history into fairmatch's inputs: Slurm's accounting
    /// (`sacct`) or a Standard Workload Format log (the Parallel Workloads
    /// Archive's; `.gz` is read as is) becomes a native workload and a
    /// cluster file, which `compare --workload W --cluster C` replays under
    /// every policy. See docs/formats.md, "Importing a site's history".
    Import(ImportArgs),
    /// How good the plugin's learned run times are: reads the state file it
    /// saves in slurmctld's StateSaveLocation (`fairmatch_state`) and prints,
    /// per user and partition, the runs learned and the mean error the
    /// learned estimate had against each run it then saw.
    Estimates(EstimatesArgs),
    /// The live queue of a cluster as sched/fairmatch plans it, read with
    /// squeue (any user can run it): each job's flavor, its planned start
    /// and where each estimate came from. Answers "why is my job not
    /// running, and when will it".
    Queue(QueueArgs),
    /// Measure a solver.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// What the history is.
    #[arg(value_enum)]
    format: ImportFormat,
    /// The log: sacct's output (`sacct --allocations --parsable2
    /// --noheader --format=JobID,User,JobName,Partition,Submit,Start,
    /// ElapsedRaw,TimelimitRaw,NNodes,AllocTRES,State`), or an SWF file.
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Where the workload goes (native CSV).
    #[arg(long, value_name = "CSV")]
    workload_out: PathBuf,
    /// Where the cluster goes (YAML).
    #[arg(long, value_name = "YAML")]
    cluster_out: PathBuf,
    /// Keep only jobs submitted this many days from --from-day on (a month:
    /// 30). Default: every job.
    #[arg(long, value_name = "DAYS")]
    days: Option<f64>,
    /// The first day kept, counted from the first job's submission.
    #[arg(long, value_name = "DAY", default_value_t = 0.0)]
    from_day: f64,
    /// Multiply the time between submissions by this (below 1 raises the
    /// load: the Parallel Workloads Archive's usual way to ask how a
    /// machine would cope with more work). 1 keeps the history's times.
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0)]
    arrival_scale: f64,
    /// SWF: the name of the machine's one flavor.
    #[arg(long, value_name = "NAME", default_value = "node")]
    flavor: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ImportFormat {
    /// Slurm accounting: `sacct --parsable2`, the fields above.
    Sacct,
    /// The Standard Workload Format (Parallel Workloads Archive).
    Swf,
}

#[derive(clap::Args, Debug)]
pub struct QueueArgs {
    /// Only this user's jobs (squeue -u).
    #[arg(long)]
    user: Option<String>,
    /// Print JSON instead of a table (start: seconds since the epoch).
    #[arg(long)]
    json: bool,
    /// The squeue to run (it reads SLURM_CONF as usual).
    #[arg(long, default_value = "squeue")]
    squeue: String,
}

#[derive(clap::Args, Debug)]
pub struct EstimatesArgs {
    /// The plugin's state file, e.g. /var/spool/slurmctld/fairmatch_state.
    #[arg(value_name = "STATE_FILE")]
    state: PathBuf,
    /// One row per job (user, name, partition) instead of per user and
    /// partition.
    #[arg(long)]
    per_job: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Cluster file (YAML: `flavors: [{name, slots}]`, optional
    /// `users: [{name, weight}]`). Needed with a native workload.
    #[arg(long, value_name = "YAML")]
    cluster: Option<PathBuf>,
    /// Workload file. Without it, the bundled workload named by --bundled
    /// runs.
    #[arg(long, value_name = "FILE")]
    workload: Option<PathBuf>,
    /// Format of --workload: `native` is a CSV with header
    /// job_id,user,arrival,duration_<flavor>...[,estimate_<flavor>...];
    /// `allox` is AlloX's simulator input (flavors gpu and cpu); `gavel` is
    /// Gavel's trace (see --throughputs).
    #[arg(long, value_enum, default_value_t = Format::Native)]
    format: Format,
    /// Gavel's throughput table (simulation_throughputs.json), for
    /// --format gavel: a job's run time on a flavor is its total_steps over
    /// the isolated steps per second of the worker type of that name.
    #[arg(long, value_name = "JSON")]
    throughputs: Option<PathBuf>,
    /// Users to deal a Gavel trace's jobs to (its traces have none).
    #[arg(long, value_name = "N", default_value_t = 4)]
    users: usize,
    /// How a Gavel trace's jobs get users.
    #[arg(long, value_enum, default_value_t = UserAssignmentArg::RoundRobin)]
    user_assignment: UserAssignmentArg,
    /// What to do with a Gavel or Philly trace's multi-GPU jobs.
    #[arg(long, value_enum, default_value_t = MultiGpuArg::Keep)]
    multi_gpu: MultiGpuArg,
    /// How --format philly derives per-flavor times.
    #[arg(long, value_enum, default_value_t = PhillyTimesArg::Allox)]
    philly_times: PhillyTimesArg,
    /// Mean and standard deviation of the CPU-over-GPU speedup that
    /// --philly-times allox draws (truncated to [0.7, 60]).
    #[arg(long, default_value_t = 10.0)]
    speedup_mean: f64,
    #[arg(long, default_value_t = 10.0)]
    speedup_sd: f64,
    /// --format philly: keep jobs arriving from this many seconds after the
    /// trace's first job...
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    window_start: f64,
    /// ...up to this many (default: the whole trace).
    #[arg(long, value_name = "SECONDS")]
    window_end: Option<f64>,
    /// --format philly: keep at most this many jobs (the earliest).
    #[arg(long, value_name = "N")]
    max_jobs: Option<usize>,
    /// --format philly or gavel: divide arrivals by this (2 doubles the
    /// load; on a trace of Poisson arrivals such as Gavel's generator
    /// makes, the same as generating it at twice the rate).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    load_factor: f64,
    /// Which bundled workload to run when no --workload is given.
    #[arg(long, value_enum, default_value_t = BundledArg::Testbed)]
    bundled: BundledArg,
    /// GPU slots for AlloX-format input [bundled defaults: testbed 4, google 20].
    #[arg(long, value_name = "N")]
    gpu_slots: Option<usize>,
    /// CPU slots for AlloX-format input [bundled defaults: testbed 8, google 20].
    #[arg(long, value_name = "N")]
    cpu_slots: Option<usize>,
    /// Time unit of AlloX-format input [bundled defaults: testbed seconds,
    /// google minutes; otherwise seconds].
    #[arg(long, value_enum)]
    time_unit: Option<TimeUnit>,
    /// Policy to run; repeat for several. Default: all of them.
    #[arg(short, long = "policy", value_enum, value_name = "POLICY")]
    policies: Vec<PolicyArg>,
    /// AlloX fairness knob in (0, 1]: only the ceil(alpha*|U|) least-served
    /// users' jobs are candidates. 1 is pure performance. Repeat to run
    /// AlloX once per value [default: 0.5 and 1].
    #[arg(short, long = "alpha", value_name = "A")]
    alphas: Vec<f64>,
    /// Cap AlloX's matching at N of the eligible jobs, as AlloX's N_max
    /// does; --candidate-rule says which N. Default: no cap.
    #[arg(long, value_name = "N")]
    max_candidates: Option<usize>,
    /// Which jobs --max-candidates keeps.
    #[arg(long, value_enum, value_name = "RULE", default_value_t = CandidateRuleArg::Shortest)]
    candidate_rule: CandidateRuleArg,
    /// AlloX re-plans at every event; with this many seconds of stickiness
    /// a job keeps the machine the previous plan gave it unless moving it
    /// gains more total JCT than that. Steadies plans against noise; the
    /// Slurm plugin's `Stickiness` (default 1 s) is the same knob.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    stickiness: f64,
    /// AlloX's waiting-time bound: a job that has waited this long goes
    /// ahead of every job that has not, on the machine where it finishes
    /// soonest, and the matching plans the rest around it. Its wait is then
    /// at most this plus the rest of the run ahead of it, while the cluster
    /// keeps up. Without preemption, overdue jobs hold at most three
    /// quarters of each flavor, less as the backlog grows, and none once
    /// the backlog alone takes longer than the bound (17 hours by
    /// default).
    #[arg(long, value_name = "SECONDS", default_value_t = fairmatch::policy::allox::MAX_WAIT,
          conflicts_with = "no_max_wait")]
    max_wait: f64,
    /// Run AlloX without a waiting-time bound (AlloX as published).
    #[arg(long)]
    no_max_wait: bool,
    /// With --preempt rounds: a job is also overdue once it has waited this
    /// many times its fastest estimate, whichever comes first with
    /// --max-wait.
    #[arg(long, value_name = "K", default_value_t = fairmatch::policy::allox::WAIT_FACTOR)]
    wait_factor: f64,
    /// Preemptive AlloX: at the start of each round an overdue job (see
    /// --max-wait and --wait-factor) that would wait past the round takes
    /// the machine of a running job (one that has run --min-run since it
    /// started, with the most work left), which is queued again with the
    /// work it has left; then a waiting job takes one when the total JCT
    /// falls by six rounds net of --preempt-overhead (--no-preempt-gain
    /// turns this off).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = PreemptArg::Off)]
    preempt: PreemptArg,
    /// With --preempt rounds: preempt only for overdue jobs, never to lower
    /// the total JCT.
    #[arg(long)]
    no_preempt_gain: bool,
    /// With --preempt rounds: seconds between rounds.
    #[arg(long, value_name = "SECONDS", default_value_t = fairmatch::policy::allox::ROUND)]
    round: f64,
    /// With --preempt rounds: seconds a job runs after each start before it
    /// may be preempted [default: one round].
    #[arg(long, value_name = "SECONDS")]
    min_run: Option<f64>,
    /// Seconds a preempted job loses each time it starts again (checkpoint
    /// and restart), under every preemptive policy; policies are not told.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    preempt_overhead: f64,
    /// Exact matching solver. Both give an optimal matching (they may
    /// break ties differently); `classes` is faster on deep queues and
    /// keeps its matching between decisions, but with --stickiness every
    /// solve is `fast`'s.
    #[arg(long, value_enum, default_value_t)]
    solver: SolverArg,
    /// Replace the estimates by true * (1 + e), e ~ Normal(0, SIGMA),
    /// drawn with --seed. Without it, estimates come from the input (or are
    /// exact where the input has none).
    #[arg(long, value_name = "SIGMA")]
    estimate_error: Option<f64>,
    /// Tell the policies what the Slurm plugin would learn with no hints:
    /// when a job arrives (and while it waits), the mean runs of earlier
    /// runs of the same job (ids that differ only by a trailing `-N`) on
    /// each flavor, carried to other flavors by learned speed ratios, else
    /// a typical run of the user's, or SECONDS where nothing is known of
    /// the user (the plugin's DefaultRuntime); at
    /// least as long as a run of the job in flight there has run.
    #[arg(long, value_name = "SECONDS", conflicts_with = "estimate_error")]
    learned_estimates: Option<f64>,
    /// Seed for everything random in a run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Profile each job before it may be scheduled. Probes occupy slots
    /// and delay the job; they do not change what the scheduler is told
    /// (the input's estimates, or the truth where it has none, or
    /// --estimate-error). `fairmatch` (the default): one probe per flavor
    /// at 1% + 2% of the job's length. `allox`: as AlloX's simulator, two
    /// probes per flavor (1% and 2%) on slots of their own, each at least
    /// one time unit, and jobs that arrive together wait for the whole
    /// group's probes.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1,
          default_missing_value = "fairmatch")]
    profile: Option<ProfileArg>,
    /// Seconds each job holds its slot beyond its run time (launch and
    /// completion latency of a real cluster); policies are not told. Used
    /// to calibrate the simulator as a twin of a Slurm cluster.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    job_overhead: f64,
    /// A job that waits longer than this many seconds counts as starved
    /// (the `starved` column) [default: one day].
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400.0)]
    starvation_bound: f64,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write every job's placement and times, for every run, to this
    /// CSV file (run,job_id,user,flavor,machine,arrival,start,finish,
    /// longest_wait,preemptions): the flavor and slot each job finished on,
    /// when it first started and when it finished, its longest wait at a
    /// stretch, and how many times it was preempted.
    #[arg(long, value_name = "CSV")]
    schedule_out: Option<PathBuf>,
    /// Also write a report a person can read into this directory (made if
    /// missing): index.html with the comparison, per-user tables and the
    /// charts (average JCT per run, each flavor's utilisation over time),
    /// the charts as SVG files, and report.json (the runs, as `simulate
    /// --json` prints them).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    sim: SimulateArgs,
    /// Policies to run: `all`, or names separated by commas
    /// (e.g. allox,fifo,drf-sjf).
    #[arg(long = "policies", value_name = "LIST", default_value = "all")]
    policy_list: String,
    /// Print CSV (one row per run) instead of a table.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
}

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// The cluster: flavor=slots, comma-separated. The first flavor is the
    /// reference the durations are drawn for.
    #[arg(long, value_name = "LIST", default_value = "gpu=4,cpu=8")]
    flavors: String,
    #[arg(long, default_value_t = 4)]
    users: usize,
    #[arg(long, default_value_t = 100)]
    jobs_per_user: usize,
    /// Offered work (each job on its fastest flavor) over the cluster's
    /// capacity; Poisson arrivals at that rate. 0: every job at t=0.
    #[arg(long, default_value_t = 0.8)]
    load: f64,
    /// Durations on the first flavor: log-uniform in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    min_duration: f64,
    #[arg(long, value_name = "SECONDS", default_value_t = 3600.0)]
    max_duration: f64,
    /// Each user's factor on every other flavor (how many times longer its
    /// jobs take there): log-uniform between these.
    #[arg(long, value_name = "X", default_value_t = 0.5)]
    min_slowdown: f64,
    #[arg(long, value_name = "X", default_value_t = 10.0)]
    max_slowdown: f64,
    /// Per-job variation around the user's factor (sigma of its log).
    #[arg(long, value_name = "SIGMA", default_value_t = 0.3)]
    spread: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the workload here instead of to standard output.
    #[arg(long, value_name = "CSV")]
    out: Option<PathBuf>,
    /// Also write the cluster file here.
    #[arg(long, value_name = "YAML")]
    cluster_out: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Solve one seeded random instance and report time, objective and
    /// peak memory. Machines are split evenly across flavors; a quarter are
    /// busy.
    Solver(BenchSolverArgs),
    /// Run a seeded synthetic workload through the simulator under AlloX
    /// (alpha 1, exact estimates), re-solving at every event, with a
    /// progress bar; report the time and the decisions per second.
    Sim(BenchSimArgs),
    /// Jobs of any width: the gap of AlloX's plan to an exact exhaustive
    /// optimum on seeded random small instances (mean, p95, worst), beside
    /// smallest-area-first; with --decision, the time of one cold decision
    /// on a deep queue of mixed widths.
    Gangs(BenchGangsArgs),
}

#[derive(clap::Args, Debug)]
pub struct BenchGangsArgs {
    /// Random instances in the gap study.
    #[arg(long, default_value_t = 1000)]
    instances: usize,
    /// Jobs per instance (at most 8: the optimum is found exhaustively).
    #[arg(long, default_value_t = 6)]
    jobs: usize,
    /// Seed of the first instance; instance i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Time one cold decision instead of the gap study.
    #[arg(long)]
    decision: bool,
    /// With --decision: pending jobs.
    #[arg(long, default_value_t = 2000)]
    pending: usize,
    /// With --decision: 4-GPU nodes.
    #[arg(long, default_value_t = 500)]
    nodes: usize,
    /// With --decision: GPU types the nodes are split into.
    #[arg(long, default_value_t = 4)]
    types: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct BenchSimArgs {
    /// Jobs in the workload.
    #[arg(long, default_value_t = 100_000)]
    jobs: usize,
    #[arg(long, default_value_t = 20)]
    gpu_slots: usize,
    #[arg(long, default_value_t = 20)]
    cpu_slots: usize,
    /// Offered work over capacity (Poisson arrivals).
    #[arg(long, default_value_t = 0.9)]
    load: f64,
    /// Queue every job at time 0 instead (the deep-queue case).
    #[arg(long)]
    at_once: bool,
    #[arg(long, default_value_t = 10)]
    users: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Matching solver; `classes` keeps its matching between decisions.
    #[arg(long, value_enum, default_value_t)]
    solver: SolverArg,
    /// Print one JSON object instead of a line of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct BenchSolverArgs {
    /// Jobs to place, all queued at once.
    #[arg(long, default_value_t = 400)]
    jobs: usize,
    /// Machines (slots), split evenly across the flavors.
    #[arg(long, default_value_t = 96)]
    machines: usize,
    /// Flavors of hardware.
    #[arg(long, default_value_t = 3)]
    flavors: usize,
    /// Which solver: one of the product's (default: the product's
    /// default, `fast`; with `--incremental`, `classes`) or an oracle.
    #[arg(long, value_enum)]
    solver: Option<BenchSolverArg>,
    /// Seed of the random instance.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The fraction of machines busy, each for up to 2,000 s. Other values
    /// than the default redraw only the machines: the jobs stay the seed's.
    #[arg(long, default_value_t = fairmatch::solver::oracle::random::DEFAULT_BUSY)]
    busy: f64,
    /// Print one JSON object instead of a line of text.
    #[arg(long)]
    json: bool,
    /// Measure warm re-solves instead: solve the instance cold with the
    /// class solver, then replay `--events` events on the kept state (alternately an
    /// arrival and a completion that starts the next machine's first job),
    /// time each, and check the final warm state against a cold solve of
    /// the same jobs.
    #[arg(long)]
    incremental: bool,
    /// Events replayed by `--incremental`.
    #[arg(long, default_value_t = 200)]
    events: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Native,
    Allox,
    /// Gavel's trace (10 fields, or the older 7-field msr layout), with
    /// --throughputs and a --cluster whose flavors are its worker types.
    Gavel,
    /// The Philly trace (timestamp,duration,num_gpus,gpu_time,cluster),
    /// with per-flavor times from --philly-times.
    Philly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PhillyTimesArg {
    /// AlloX's way: CPU time = GPU time x a speedup from a normal
    /// distribution truncated to [0.7, 60]; cluster flavors gpu and cpu.
    Allox,
    /// Gavel's way: a random Gavel job type per job, the duration counted
    /// as V100 time and scaled by --throughputs; flavors are worker types.
    Gavel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum UserAssignmentArg {
    /// Job i goes to user i mod N, in trace order.
    RoundRobin,
    /// Each job to a user drawn uniformly with --seed.
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MultiGpuArg {
    /// Run a job on more than one GPU as a gang: its GPUs at once, on one
    /// node if the cluster's nodes (`per_node`) hold it, else on as few as
    /// do.
    Keep,
    /// Skip such jobs and say how many.
    Drop,
    /// A job on more than one GPU is an error naming its line.
    Refuse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BundledArg {
    /// AlloX's testbed: 40 jobs, 4 users, all at t=0.
    Testbed,
    /// AlloX's simulation workload: 10 users x 1000 jobs, Google arrivals.
    Google,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TimeUnit {
    Seconds,
    Minutes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// AlloX: min-cost matching over the least-served users' jobs.
    Allox,
    /// First come, first served on the fastest idle flavor.
    Fifo,
    /// Greedy join-the-shortest-queue: earliest estimated finish.
    Jsq,
    /// Shortest job first, each job on its fastest flavor.
    Sjf,
    /// AlloX's DRFF: DRF across users, arrival order within a user, every
    /// job on the GPU.
    DrfFifo,
    /// AlloX's DRFS: DRF across users, shortest first within a user, each
    /// job on its fastest flavor.
    DrfSjf,
    /// AlloX's DRFA: DRF over a virtual CPU (cpu + beta x gpu slots), GPU
    /// first.
    Drfa,
    /// Equal share: each active user may hold 1/n of every flavor.
    Es,
    /// Shortest remaining processing time, preemptive.
    Srpt,
    /// Tiresias: discretised least-attained-service queues, preemptive.
    Tiresias,
    /// Gavel's heterogeneity-aware max-min fairness: an LP each 360 s
    /// round, preemptive.
    GavelMaxmin,
    /// Finish-time fairness (Themis): each round minimises the worst rho,
    /// preemptive.
    Ftf,
    /// Slurm's sched/backfill: oldest first, each job where it starts
    /// soonest, every tested job (up to bf_max_job_test) reserving.
    SlurmBackfill,
    /// Slurm's priority order with EASY backfill: only the first job that
    /// cannot start reserves.
    SlurmEasy,
}

impl PolicyArg {
    /// The name `--policy` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            PolicyArg::Allox => "allox",
            PolicyArg::Fifo => "fifo",
            PolicyArg::Jsq => "jsq",
            PolicyArg::Sjf => "sjf",
            PolicyArg::DrfFifo => "drf-fifo",
            PolicyArg::DrfSjf => "drf-sjf",
            PolicyArg::Drfa => "drfa",
            PolicyArg::Es => "es",
            PolicyArg::Srpt => "srpt",
            PolicyArg::Tiresias => "tiresias",
            PolicyArg::GavelMaxmin => "gavel-maxmin",
            PolicyArg::Ftf => "ftf",
            PolicyArg::SlurmBackfill => "slurm-backfill",
            PolicyArg::SlurmEasy => "slurm-easy",
        }
    }
}

/// The product's exact solvers (see [`SolverKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SolverArg {
    /// Our exact solver: lazy slots, searched by flavor and position; the
    /// only one that takes stickiness's preferred machines.
    Fast,
    /// Our exact solver over position classes (all machines of a flavor at
    /// one position are one node), the fastest from a handful of machines
    /// on; AlloX keeps its state between decisions. `fast` when a job
    /// prefers a machine.
    Classes,
}

impl Default for SolverArg {
    fn default() -> Self {
        match SolverKind::default() {
            SolverKind::Fast => SolverArg::Fast,
            SolverKind::Classes => SolverArg::Classes,
        }
    }
}

impl From<SolverArg> for SolverKind {
    fn from(s: SolverArg) -> Self {
        match s {
            SolverArg::Fast => Self::Fast,
            SolverArg::Classes => Self::Classes,
        }
    }
}

/// What `bench solver` can time: the product's solvers and the oracles
/// they are checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum BenchSolverArg {
    /// The product's default (see `--solver` of `simulate`).
    #[default]
    Fast,
    /// The class solver.
    Classes,
    /// The generic Hungarian method on the dense matrix, as AlloX and
    /// Gavel solve it (an oracle; refuses matrices over 2^28 cells).
    Munkres,
    /// Exhaustive search (an oracle; at most 9 jobs).
    Brute,
}

impl BenchSolverArg {
    fn name(self) -> &'static str {
        match self {
            BenchSolverArg::Fast => "fast",
            BenchSolverArg::Classes => "classes",
            BenchSolverArg::Munkres => "munkres",
            BenchSolverArg::Brute => "brute",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PreemptArg {
    /// AlloX never preempts.
    Off,
    /// Preempt for overdue jobs, and for total JCT, at the start of each
    /// --round.
    Rounds,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ProfileArg {
    /// One probe per flavor, 3% of the job's length.
    Fairmatch,
    /// AlloX's: two probes per flavor, at least one time unit each, group
    /// wait.
    Allox,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CandidateRuleArg {
    /// AlloX's rule: the shortest job on each flavor in turn (GPU, CPU,
    /// GPU, ...).
    Shortest,
    /// The earliest arrivals.
    Arrival,
}

impl From<CandidateRuleArg> for fairmatch::policy::allox::candidates::CandidateRule {
    fn from(r: CandidateRuleArg) -> Self {
        match r {
            CandidateRuleArg::Shortest => Self::Shortest,
            CandidateRuleArg::Arrival => Self::Arrival,
        }
    }
}

/// What went wrong, and which exit code says so: 2 for bad input or
/// arguments, 1 for a failure while running.
#[derive(Debug)]
pub enum CliError {
    Input(String),
    Run(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) => 2,
            CliError::Run(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) | CliError::Run(m) => f.write_str(m),
        }
    }
}

pub fn run(args: Args) -> Result<(), CliError> {
    match args.command {
        Command::Simulate(a) => simulate::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Estimates(a) => estimates::run(a),
        Command::Import(a) => import::run(a),
        Command::Queue(a) => queue::run(a),
        Command::Bench(BenchCommand::Solver(a)) => bench::solver(a),
        Command::Bench(BenchCommand::Sim(a)) => bench_sim::run(a),
        Command::Bench(BenchCommand::Gangs(a)) => bench_gangs::run(a),
    }
}
