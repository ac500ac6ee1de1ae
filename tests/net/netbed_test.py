"""tools/netbed: the links are shaped and counted, TCP's congestion control is the one asked for,
and a run leaves nothing behind, whether it ends well, fails, runs out of time, is interrupted,
or is killed (then `netbed cleanup`).

    python3 tests/net/netbed_test.py      (root; exits 77 with the reason where netbed cannot run)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NETBED = [sys.executable, os.path.join(ROOT, "tools", "netbed")]
SKIP = 77

# Node 1 receives, node 0 sends BYTES over TCP to node 1 (the {addr} of node 1 is .2).
TRANSFER = r"""
import socket, sys, time
node, size = int(sys.argv[1]), int(sys.argv[2])
if node == 1:
    server = socket.socket(); server.bind(("0.0.0.0", 5001)); server.listen(1)
    conn, _ = server.accept(); got = 0
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk: break
        got += len(chunk)
    print("received", got)
else:
    for _ in range(100):
        try:
            conn = socket.create_connection(("198.18.0.2", 5001)); break
        except OSError:
            time.sleep(0.05)
    conn.sendall(b"x" * size); conn.close()
"""


def ours(pid):
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(f"netbed{pid}-")]


def root_links():
    return subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout


def start(*args):
    return subprocess.Popen(NETBED + ["run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for_namespaces(process, count, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(ours(process.pid)) < count:
        time.sleep(0.05)
    return len(ours(process.pid)) >= count


class NetbedTest(unittest.TestCase):
    def setUp(self):
        self.links_before = root_links()

    def tearDown(self):
        # Nothing is ever added to the machine's own namespace.
        self.assertEqual(root_links(), self.links_before)

    def test_shapes_counts_and_cleans_up(self):
        size = 4 << 20
        with tempfile.TemporaryDirectory() as directory:
            counters = os.path.join(directory, "links.json")
            started = time.monotonic()
            run = start("--nodes", "2", "--rate-mbit", "50", "--timeout", "60", "--counters",
                        counters, "--", sys.executable, "-c", TRANSFER, "{node}", str(size))
            output, _ = run.communicate(timeout=90)
            seconds = time.monotonic() - started
            self.assertEqual(run.returncode, 0, output)
            self.assertIn(f"received {size}", output)
            with open(counters) as source:
                links = json.load(source)
        self.assertEqual(ours(run.pid), [])
        # 4 MiB at 50 Mbit/s take 0.67 s at least: the rate holds.
        self.assertGreater(seconds, size * 8 / 50e6)
        sent = links["links"][0]["up"]["payload_bytes"]
        delivered = links["links"][1]["down"]["payload_bytes"]
        for payload in (sent, delivered):
            self.assertLess(abs(payload - size) / size, 0.01, links)

    def test_congestion_control_is_set_and_recorded_or_refused(self):
        # reno is built into every kernel, and every namespace may use it.
        with tempfile.TemporaryDirectory() as directory:
            counters = os.path.join(directory, "links.json")
            run = start("--nodes", "2", "--rate-mbit", "50", "--congestion-control", "reno",
                        "--counters", counters, "--", "sysctl", "-n",
                        "net.ipv4.tcp_congestion_control")
            output, _ = run.communicate(timeout=60)
            self.assertEqual(run.returncode, 0, output)
            self.assertEqual(output.split(), ["reno", "reno"])
            with open(counters) as source:
                links = json.load(source)
        self.assertEqual(links["congestion_control"], "reno")
        refused = {"no-such-algorithm": "net.ipv4.tcp_available_congestion_control"}
        # One this kernel has but does not allow in a namespace, where the machine has one.
        listed = {name: subprocess.run(["sysctl", "-n", f"net.ipv4.tcp_{name}_congestion_control"],
                                       capture_output=True, text=True).stdout.split()
                  for name in ("available", "allowed")}
        for name in set(listed["available"]) - set(listed["allowed"]):
            refused[name] = "net.ipv4.tcp_allowed_congestion_control"
            break
        for name, setting in refused.items():
            run = start("--nodes", "2", "--congestion-control", name, "--", "true")
            output, _ = run.communicate(timeout=60)
            self.assertEqual(run.returncode, 2, output)
            self.assertIn(setting, output)
            self.assertEqual(ours(run.pid), [])

    def test_queue_drops_are_counted(self):
        # 2 MB of UDP at once into a 1 Mbit/s link whose queue holds 50 ms: most is dropped.
        flood = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "for _ in range(2000): s.sendto(b'x' * 1000, ('198.18.0.2', 5002))")
        with tempfile.TemporaryDirectory() as directory:
            counters = os.path.join(directory, "links.json")
            run = start("--nodes", "2", "--rate-mbit", "1", "--counters", counters, "--", "sh",
                        "-c", f'[ {{node}} = 0 ] && {sys.executable} -c "{flood}" || true')
            output, _ = run.communicate(timeout=60)
            self.assertEqual(run.returncode, 0, output)
            with open(counters) as source:
                links = json.load(source)
        self.assertGreater(links["links"][0]["up"]["drops"], 1000, links)
        self.assertEqual(links["links"][1]["up"]["drops"], 0, links)

    def test_failure_removes_everything(self):
        run = start("--nodes", "3", "--", "sh", "-c", "exit 3")
        output, _ = run.communicate(timeout=60)
        self.assertEqual(run.returncode, 1, output)
        self.assertIn("exited 3", output)
        self.assertEqual(ours(run.pid), [])

    def test_time_limit_stops_every_node(self):
        started = time.monotonic()
        run = start("--nodes", "2", "--timeout", "2", "--", "sleep", "120")
        output, _ = run.communicate(timeout=60)
        self.assertEqual(run.returncode, 124, output)
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual(ours(run.pid), [])

    def test_interrupt_and_terminate_remove_everything(self):
        for signum in (signal.SIGINT, signal.SIGTERM):
            run = start("--nodes", "3", "--rate-mbit", "10", "--", "sleep", "120")
            self.assertTrue(wait_for_namespaces(run, 4), "the bed never came up")
            run.send_signal(signum)
            output, _ = run.communicate(timeout=60)
            self.assertEqual(run.returncode, 130, output)
            self.assertEqual(ours(run.pid), [], signal.Signals(signum).name)

    def test_cleanup_after_sigkill(self):
        run = start("--nodes", "2", "--", "sleep", "120")
        self.assertTrue(wait_for_namespaces(run, 3), "the bed never came up")
        run.kill()
        run.wait(timeout=60)  # its nodes' processes live on (and hold its output pipe)
        self.assertNotEqual(ours(run.pid), [])  # a killed run cannot clean up after itself
        cleaned = subprocess.run(NETBED + ["cleanup"], capture_output=True, text=True, timeout=60)
        self.assertEqual(cleaned.returncode, 0, cleaned.stdout + cleaned.stderr)
        self.assertEqual(ours(run.pid), [])
        run.stdout.close()


if __name__ == "__main__":
    probe = subprocess.run(NETBED + ["probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(probe.stdout.strip() or probe.stderr.strip())
        sys.exit(SKIP if probe.returncode == SKIP else 1)
    unittest.main()
