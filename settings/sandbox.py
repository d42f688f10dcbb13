"""The ``sandbox`` profile: crawling the sandbox web on loopback (tests, benchmarks, demo).

The sandbox serves hundreds of host names from one loopback address, so two
protections meant for the real web are relaxed here, and only here:

* loopback addresses may be fetched (address safety refuses them elsewhere);
* the per-IP cap is off: every sandbox host shares 127.0.0.1, and the server-side
  record audits each host name on its own.
"""

STORE_URI = "sqlite:///data/sandbox.db"
ADDRESS_ALLOWLIST = ["127.0.0.0/8", "::1/128"]
PER_IP_CONCURRENCY = 0
