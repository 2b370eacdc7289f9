"""Helpers shared by the benchmarks in bench/: the machine and its load as
the results state them, CPU time of child processes, and the "median
(min-max)" cells of the tables. Imported by the scripts beside it (Python
puts a script's own folder first on sys.path)."""
import os
import platform
import resource
import statistics
import subprocess
import time


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine(with_fio=False):
    """One line: CPUs and their model, memory, kernel (and fio's version)."""
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    text = "%d vCPU (%s), %.0f GiB RAM, Linux %s" % (os.cpu_count(), model, mem_kib / 2**20,
                                                     platform.release())
    if with_fio:
        fio = subprocess.run(["fio", "--version"], capture_output=True, text=True)
        text += ", " + fio.stdout.strip()
    return text


class ChildCpu:
    """User + system CPU seconds of the child processes that ended inside the
    `with` block (getrusage RUSAGE_CHILDREN), in `.seconds`."""

    def __enter__(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.start = r.ru_utime + r.ru_stime
        return self

    def __exit__(self, *exc):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.seconds = r.ru_utime + r.ru_stime - self.start


def spread(values, fmt):
    """"median (min-max)" of `values`, each formatted with `fmt`."""
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values),
                                                   max(values))


def drop_caches(settle):
    """Empties the page cache (when permitted) and waits `settle` seconds:
    virtual machines with free page reporting hand the freed memory back to
    the host a few seconds later (see storage_vs_fio.py)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass
    time.sleep(settle)
