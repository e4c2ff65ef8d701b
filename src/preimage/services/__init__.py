"""The resident processes: the decision service the hook asks before every tool call, the warm
process that runs commands without a Python start-up, the wire both speak, and the
hook's standard-library client.

Above the backup layer, below the command line: a service decides with the layer and
runs the command line it is handed (:func:`preimage._entry.serve_warm`), never imports it."""
