"""server.py whose embedding model starts loading only once a file exists: a test holds the
server in the seconds before its model is ready, for as long as it needs, whatever the machine's
speed (tests/test_server.py). All the rest is server.py's own, the model too, once it loads.

    python tests/gated_model_server.py GATE_FILE --index INDEX [server.py's options]
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import index_build  # noqa: E402  (needs the sys.path line above)
import server  # noqa: E402

GATE = Path(sys.argv.pop(1))
GATE_TIMEOUT = 600  # seconds: a test that never opens the gate has failed long before
load_model = index_build.load_model


def load_model_once_the_gate_exists(**options):
    deadline = time.monotonic() + GATE_TIMEOUT
    while not GATE.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return load_model(**options)


index_build.load_model = load_model_once_the_gate_exists
server.main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # as server.py ends: no finalization while the model may still be loading
