"""The ``sandbox`` profile: crawling the sandbox web on loopback (tests, benchmarks, demo).

The sandbox serves hundreds of host names from one loopback address, so two
protections meant for the real web are relaxed here, and only here:

* loopback addresses may be fetched (address safety refuses them elsewhere);
* the per-IP cap and rate are off: every sandbox host shares 127.0.0.1, and the
  server-side record audits each host name on its own;
* so are the budgets per registered domain: every sandbox host is a name under
  ``sandbox.test``, as every documentation site is under ``docs.test``.
"""

STORE_URI = "sqlite:///data/sandbox.db"
ADDRESS_ALLOWLIST = ["127.0.0.0/8", "::1/128"]
PER_IP_CONCURRENCY = 0
PER_IP_RATE = 0
DOMAIN_MAX_HOSTS = 0
DOMAIN_ACTIVE_HOSTS = 0
DOMAIN_CONCURRENCY = 0
