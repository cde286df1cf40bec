"""The project's shared library: small helpers several apps use (admin pages, bulk SQL,
database connections, humane times and sizes, the network policy, paging, the schema
check, stage timing). It imports Django and nothing of the project, so every app may
import it (tests/test_layout.py)."""
