# Simulated tools for pipelines/aime24_batch.hcl: stand-ins for
# check_engine_config, run_ruler.py and run_submission_aime24.py that need no
# GPU and no Python (sim/simlib; `make sim` builds them into bin/sim/).
# Their results are SIMULATED: deterministic functions of each config, marked
# "simulated": true. Paths are relative to the workspace root, which must
# hold bin/sim/ (`make demo` copies them into its workspace).
#
#   CAIRN_GPUS=sim:4 cairn apply pipelines/aime24_batch.hcl \
#     --var-file pipelines/sim.tfvars --var tag=demo --var 'variants=[...]'

preflight_command = ["bin/sim/preflight", "{config}"]
ruler_command     = ["bin/sim/ruler", "--config", "{config}"]
aime24_command    = ["bin/sim/aime24", "--config", "{config}"]

preflight_runner = "bin/sim/preflight"
ruler_runner     = "bin/sim/ruler"
aime24_runner    = "bin/sim/aime24"

# The simulated tools contain their whole "engine" and read no validation set.
engine_source   = ""
validation_data = ""
