"""Built-in connectors, one module or subpackage each, loaded lazily by the registry."""
