# The log of one UDF call: what it prints (sys.stdout and sys.stderr are replaced for the call)
# and passes to inspect(), as log entries, bounded; writing past the hard limit raises OutputLimit.
import json


class OutputLimit(Exception):
    pass


class CallLog:
    def __init__(self, max_bytes, hard_bytes):
        self.entries = []
        self.kept = 0
        self.dropped = 0
        self.written = 0
        self.max_bytes = max_bytes
        self.hard_bytes = hard_bytes

    def add(self, entry):
        size = len(json.dumps(entry, default=str))
        if self.kept + size > self.max_bytes:
            self.dropped += 1
            return
        self.kept += size
        self.entries.append(entry)

    def finish(self):
        if self.dropped:
            self.entries.append({"level": "warning", "message": f"{self.dropped} more log entries of this UDF call were dropped: the log of one call keeps {self.max_bytes} bytes."})
        return self.entries


class Capture:
    """sys.stdout / sys.stderr of a call: complete lines become log entries."""

    def __init__(self, log, level):
        self.log = log
        self.level = level
        self.pending = ""

    def write(self, s):
        s = str(s)
        self.log.written += len(s)
        if self.log.written > self.log.hard_bytes:
            raise OutputLimit(f"the UDF wrote more than {self.log.hard_bytes} bytes to its standard output and error")
        self.pending += s
        if "\n" in self.pending:
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self.log.add({"level": self.level, "message": line[:4000]})
        elif len(self.pending) > 4000:
            self.log.add({"level": self.level, "message": self.pending[:4000]})
            self.pending = ""
        return len(s)

    def flush(self):
        pass

    def close_call(self):
        if self.pending:
            self.log.add({"level": self.level, "message": self.pending[:4000]})
            self.pending = ""

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"
