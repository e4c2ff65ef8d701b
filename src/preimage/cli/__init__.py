"""The ``preimage`` command line: the click group (:mod:`.main`) and one module per family of
commands (store lifecycle, undo and log, the shared store, the backup layer, the service,
the benchmark, the demo).  The top of the package graph: nothing else imports it."""
