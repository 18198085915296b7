/* What bindgen reads: our contract, and Slurm's version number so the
 * plugin_version symbol always equals the Slurm it was built against. */
#include "slurm/slurm_version.h"
#include "fairmatch_shim.h"
