"""perfplay case runners: everything a run does below the playbooks, importable without torch or Ansible (torch is
imported lazily by the code that runs a rank).

Where things live, ground floor first. A room imports only rooms on lower floors: tests/unit/test_import_graph.py
reads this map and fails on an import that goes up or sideways, and on a room that is not on it.

     1  core/              errors, paths, atomic files, defaults, run ids, processes, pid files, network and text
     2  plan/config/       configuration's leaf: YAML, types, ranges, selections, params, the resolved shape
     2  monitors/          host and vendor monitors: the daemon, samples, counters and their summary
     3  records/           every artifact, its type beside its builder: rank, node, round, summary, environment,
                           history database
     3  vendors/           a vendor: vendor.yaml, its runtime hook, the vendor folder layout, plugin contracts, calls
     4  rank/driver/       a rank's lifecycle events and dllogger lines
     5  rank/              one rank: its environment, process group, stop requests, child programs and the worker that
                           runs a task
     6  tasks/             what a rank runs: training, inference, base (microbenchmarks), generate and operation
     7  cases/             the standard cases: model, data, configs, inference and generate parts
     7  host/              the host side: the host check, devices, data and requirement checks
     8  launch/            a node of a round: start its ranks, wait, end, clean up; container/ for the docker runtime
     9  plan/              a run request to a run directory: run vars, cases resolved and layered, rounds, bundle
    10  views/             report, compare, history and the case catalogue
    10  vendors/scaffold/  new-case and new-vendor scaffolds
    11  vendors/check/     check-vendor: a vendor folder's structure, functional run and monitor
    11  vendors/flagperf/  the FlagPerf importer
    12  cli/               the entry: `python -m case_runners` / `perfplay`, each command registered by its room,
                           and the single-host runner
"""

__version__ = "0.1.0"
