"""The rank runtime: what every rank needs before and around its task, whichever task it runs.

env            the rank's place in the run (the launcher's environment), its device index, its result file;
               stdlib only: the launcher imports it
start          the vendor's runtime prepared, the device picked, CPU threads shared among the node's ranks
dist           the process group joined and left
stop_request   SIGTERM and SIGINT turned into a stop at the task's next check
child          a program the rank runs as its child, stopped with it
worker         the rank's entry (`python -m case_runners worker`): the task dispatched by name, the result
               written whatever happens

A task (training, inference) is the package of its name with a module `task` whose run(config, config_path, log,
env) returns the rank's result; it imports this package, never the reverse.
"""
