"""The use cases: one module per command, each taking a request (plain data the CLI builds
from its options) and returning a result; none touches click. Importing this package loads
nothing: the CLI reads `choices` at start-up and each command loads its own use case."""
