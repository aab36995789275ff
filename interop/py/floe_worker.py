"""floe interop worker: drives a reference engine for floe's Go tests.

One process serves many requests. Each request is one JSON object on one line of
stdin; each answer is one JSON object on one line of the protocol stream (the
process's original stdout). Everything else the process or a JVM it starts would
print to stdout is sent to stderr instead, so logs never corrupt the protocol.

    request : {"id": 7, "op": "sql", "args": {...}}
    answer  : {"id": 7, "ok": true, "result": ...}
              {"id": 7, "ok": false, "error": "AnalysisException: ...", "trace": "..."}

Modes (argv[1]):
    spark   PySpark with Iceberg's Spark runtime and Delta Lake; ops spark_start,
            session, sql, exec.
    py      PyIceberg and delta-rs (the deltalake package); ops pyiceberg_scan,
            pyiceberg_append, pyiceberg_delete, pyiceberg_snapshots, delta_write, delta_delete, delta_update, delta_merge, delta_cdf, delta_scan,
            delta_history, exec.
Both modes answer ping and shutdown.

Rows travel with floe's value conventions (see docs/interop.md): integers as JSON
numbers, floats as numbers with "NaN", "Infinity", "-Infinity" as strings,
decimals as plain strings keeping their scale, timestamps as ISO-8601 strings
(UTC with a trailing Z for zoned types, none for local ones), dates as
YYYY-MM-DD, times as HH:MM:SS.ffffff, binary as standard base64, UUIDs in
canonical form, lists as arrays, structs as objects, maps as arrays of
[key, value] pairs.
"""

import base64
import datetime
import decimal
import json
import math
import os
import sys
import traceback
import uuid

EPOCH = datetime.datetime(1970, 1, 1)


# ---------------------------------------------------------------------------
# Arrow -> JSON rows


def format_timestamp(value, unit, zoned):
    """Formats an integer count of `unit` since the epoch as ISO-8601."""
    per_second = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}[unit]
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
    secs, frac = divmod(value, per_second)
    dt = EPOCH + datetime.timedelta(seconds=secs)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.year < 1000:
        text = "%04d%s" % (dt.year, text[text.index("-"):])
    if digits:
        # Microsecond and nanosecond units always print all their digits so
        # that two engines agree byte for byte; millisecond/second units keep
        # their natural precision.
        text += "." + str(frac).rjust(digits, "0")
    if zoned:
        text += "Z"
    return text


def format_time(value, unit):
    per_second = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}[unit]
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
    secs, frac = divmod(value, per_second)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    text = "%02d:%02d:%02d" % (h, m, s)
    if digits:
        text += "." + str(frac).rjust(digits, "0")
    return text


def json_float(v):
    if v is None:
        return None
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def json_decimal(v):
    if v is None:
        return None
    return format(v, "f")


def json_binary(v):
    if v is None:
        return None
    return base64.b64encode(bytes(v)).decode("ascii")


def _map(fn, values):
    return [None if v is None else fn(v) for v in values]


def _map_key(k):
    """Orders map entries as floe's Go side does: booleans, numbers, strings, rest."""
    if isinstance(k, bool):
        return (0, k, "")
    if isinstance(k, (int, float)):
        return (1, k, "")
    if isinstance(k, str):
        return (2, 0, k)
    return (3, 0, json.dumps(k, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def array_to_json(arr):
    """Converts a pyarrow Array to a list of JSON-ready Python values."""
    import pyarrow as pa
    import pyarrow.types as t

    typ = arr.type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
        typ = arr.type
    if isinstance(typ, pa.ExtensionType):
        storage = arr.storage
        name = getattr(typ, "extension_name", "")
        if name in ("arrow.uuid", "uuid") or typ.__class__.__name__ == "UuidType":
            return _map(lambda b: str(uuid.UUID(bytes=bytes(b))), storage.to_pylist())
        return array_to_json(storage)
    if t.is_null(typ):
        return [None] * len(arr)
    if t.is_boolean(typ) or t.is_integer(typ) or t.is_string(typ) or t.is_large_string(typ):
        return arr.to_pylist()
    if hasattr(t, "is_string_view") and t.is_string_view(typ):
        return arr.to_pylist()
    if t.is_floating(typ):
        return [json_float(v) for v in arr.to_pylist()]
    if t.is_decimal(typ):
        return [json_decimal(v) for v in arr.to_pylist()]
    if t.is_binary(typ) or t.is_large_binary(typ) or t.is_fixed_size_binary(typ) or (
        hasattr(t, "is_binary_view") and t.is_binary_view(typ)
    ):
        return [json_binary(v) for v in arr.to_pylist()]
    if t.is_date32(typ):
        return _map(lambda d: d.isoformat(), arr.to_pylist())
    if t.is_date64(typ):
        return _map(lambda d: d.isoformat()[:10], arr.to_pylist())
    if t.is_timestamp(typ):
        ints = arr.view(pa.int64()).to_pylist()
        zoned = typ.tz is not None
        if zoned and typ.tz not in ("UTC", "+00:00", "Etc/UTC", "Z"):
            # The integer is still UTC-based (Arrow stores instants); only the
            # display zone differs, and floe always displays UTC.
            pass
        return _map(lambda v: format_timestamp(v, typ.unit, zoned), ints)
    if t.is_time32(typ):
        ints = arr.view(pa.int32()).to_pylist()
        return _map(lambda v: format_time(v, typ.unit), ints)
    if t.is_time64(typ):
        ints = arr.view(pa.int64()).to_pylist()
        return _map(lambda v: format_time(v, typ.unit), ints)
    if t.is_struct(typ):
        children = arr.flatten()
        names = [typ.field(i).name for i in range(typ.num_fields)]
        cols = [array_to_json(c) for c in children]
        valid = arr.is_valid().to_pylist()
        out = []
        for i in range(len(arr)):
            if not valid[i]:
                out.append(None)
            else:
                out.append({names[j]: cols[j][i] for j in range(len(names))})
        return out
    if t.is_map(typ):
        # MapArray: offsets into a struct<key, value> child.
        offsets = arr.offsets.to_pylist()
        keys = array_to_json(arr.keys)
        items = array_to_json(arr.items)
        base = offsets[0] if offsets else 0
        valid = arr.is_valid().to_pylist()
        out = []
        for i in range(len(arr)):
            if not valid[i]:
                out.append(None)
                continue
            lo, hi = offsets[i] - base, offsets[i + 1] - base
            entries = [[keys[k], items[k]] for k in range(lo, hi)]
            entries.sort(key=lambda e: _map_key(e[0]))
            out.append(entries)
        return out
    if t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ):
        values = array_to_json(arr.flatten())
        valid = arr.is_valid().to_pylist()
        lengths = arr.value_lengths().to_pylist()
        out, pos = [], 0
        for i in range(len(arr)):
            if not valid[i]:
                out.append(None)
                continue
            n = lengths[i] or 0
            out.append(values[pos : pos + n])
            pos += n
        return out
    if t.is_dictionary(typ):
        return array_to_json(arr.cast(typ.value_type))
    raise TypeError("floe_worker: no JSON convention for Arrow type %s" % typ)


def table_to_json(table):
    """Converts a pyarrow Table (or RecordBatchReader) to {"columns", "rows"}."""
    import pyarrow as pa

    if isinstance(table, pa.RecordBatchReader):
        table = table.read_all()
    elif not isinstance(table, (pa.Table, pa.RecordBatch)):
        # arro3 and other Arrow C stream producers (delta-rs returns arro3).
        if hasattr(table, "__arrow_c_stream__"):
            table = pa.RecordBatchReader.from_stream(table).read_all()
        else:
            table = pa.table(table)
    columns = [{"name": f.name, "type": str(f.type)} for f in table.schema]
    cols = [array_to_json(table.column(i)) for i in range(table.num_columns)]
    rows = [list(r) for r in zip(*cols)] if cols else []
    return {"columns": columns, "rows": rows}


# ---------------------------------------------------------------------------
# JSON rows -> Arrow (for engines that write)


def arrow_type(spec):
    """Maps floe's small type vocabulary to a pyarrow type.

    long int short byte string boolean double float date timestamp (UTC, us)
    timestamp_ntz binary decimal(p,s)
    """
    import pyarrow as pa

    s = spec.strip().lower()
    simple = {
        "long": pa.int64(),
        "bigint": pa.int64(),
        "int": pa.int32(),
        "integer": pa.int32(),
        "short": pa.int16(),
        "byte": pa.int8(),
        "string": pa.string(),
        "boolean": pa.bool_(),
        "double": pa.float64(),
        "float": pa.float32(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
        "binary": pa.binary(),
    }
    if s in simple:
        return simple[s]
    if s.startswith("decimal(") and s.endswith(")"):
        p, sc = s[len("decimal(") : -1].split(",")
        return pa.decimal128(int(p), int(sc))
    raise ValueError("unknown column type %r (known: %s, decimal(p,s))" % (spec, ", ".join(sorted(simple))))


def parse_iso_timestamp(text):
    """Parses floe's ISO-8601 timestamp text to integer microseconds since the epoch."""
    s = text.strip()
    if s.endswith("Z"):
        s = s[:-1]
    elif len(s) > 6 and s[-6] in "+-" and s[-3] == ":":
        raise ValueError("timestamp %r: floe's convention is UTC with a trailing Z" % text)
    date_part, _, time_part = s.partition("T")
    y, mo, d = (int(x) for x in date_part.split("-"))
    h = mi = sec = 0
    frac = "0"
    if time_part:
        hms, _, frac_part = time_part.partition(".")
        h, mi, sec = (int(x) for x in hms.split(":"))
        frac = frac_part or "0"
    micros = int(frac.ljust(6, "0")[:6])
    dt = datetime.datetime(y, mo, d, h, mi, sec)
    delta = dt - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000000 + micros


def json_to_value(v, typ):
    import pyarrow.types as t

    if v is None:
        return None
    if t.is_decimal(typ):
        return decimal.Decimal(str(v))
    if t.is_floating(typ) and isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    if t.is_date32(typ):
        return datetime.date.fromisoformat(v)
    if t.is_timestamp(typ):
        return parse_iso_timestamp(v)
    if t.is_binary(typ):
        return base64.b64decode(v)
    return v


def rows_to_table(schema_spec, rows):
    import pyarrow as pa
    import pyarrow.types as t

    fields = []
    for col in schema_spec:
        nullable = col.get("nullable", True)
        fields.append(pa.field(col["name"], arrow_type(col["type"]), nullable=nullable))
    schema = pa.schema(fields)
    columns = []
    for i, f in enumerate(fields):
        vals = []
        for r, row in enumerate(rows):
            if len(row) != len(fields):
                raise ValueError("row %d has %d values, schema has %d columns" % (r, len(row), len(fields)))
            try:
                vals.append(json_to_value(row[i], f.type))
            except Exception as e:  # noqa: BLE001 - reported with its place
                raise ValueError("row %d column %r: %s" % (r, f.name, e)) from e
        if t.is_timestamp(f.type):
            columns.append(pa.array(vals, type=pa.int64()).cast(f.type))
        else:
            columns.append(pa.array(vals, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


# ---------------------------------------------------------------------------
# Spark


class SparkHandler:
    def __init__(self):
        self.spark = None
        self.sessions = {}

    def op_spark_start(self, args):
        from pyspark.sql import SparkSession

        if self.spark is not None:
            raise RuntimeError("spark_start: Spark already started")
        builder = SparkSession.builder.master(args.get("master", "local[2]")).appName("floe-interop")
        for k, v in sorted((args.get("conf") or {}).items()):
            builder = builder.config(k, v)
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel(args.get("log_level", "WARN"))
        self.sessions = {"default": self.spark}
        return {"spark_version": self.spark.version}

    def _session(self, name):
        if self.spark is None:
            raise RuntimeError("Spark is not started (send spark_start first)")
        if name not in self.sessions:
            raise KeyError("no Spark session named %r (create it with the session op)" % name)
        return self.sessions[name]

    def op_session(self, args):
        """Creates (or replaces) an isolated session: own SQL conf, own catalogs."""
        if self.spark is None:
            raise RuntimeError("Spark is not started (send spark_start first)")
        name = args["name"]
        if name == "default":
            raise ValueError("the default session cannot be replaced")
        s = self.spark.newSession()
        for k, v in sorted((args.get("conf") or {}).items()):
            s.conf.set(k, v)
        self.sessions[name] = s
        return None

    def op_drop_session(self, args):
        self.sessions.pop(args["name"], None)
        return None

    def op_sql(self, args):
        s = self._session(args.get("session", "default"))
        df = s.sql(args["sql"])
        if not args.get("collect", True):
            return None
        return table_to_json(df.toArrow())

    def op_exec(self, args):
        env = {"spark": self._session(args.get("session", "default")), "sessions": self.sessions}
        return run_exec(args, env)

    def close(self):
        if self.spark is not None:
            self.spark.stop()
            self.spark = None


# ---------------------------------------------------------------------------
# PyIceberg and delta-rs


class PyHandler:
    def _catalog(self, args):
        from pyiceberg.catalog import load_catalog

        cat = args["catalog"]
        return load_catalog(cat.get("name", "floe"), **cat.get("props", {}))

    def op_pyiceberg_scan(self, args):
        from pyiceberg.expressions import AlwaysTrue

        cat = self._catalog(args)
        try:
            tbl = cat.load_table(args["table"])
            kwargs = {}
            if args.get("row_filter"):
                kwargs["row_filter"] = args["row_filter"]
            else:
                kwargs["row_filter"] = AlwaysTrue()
            if args.get("selected_fields"):
                kwargs["selected_fields"] = tuple(args["selected_fields"])
            if args.get("snapshot_id") is not None:
                kwargs["snapshot_id"] = int(args["snapshot_id"])
            return table_to_json(tbl.scan(**kwargs).to_arrow())
        finally:
            engine = getattr(cat, "engine", None)
            if engine is not None:
                engine.dispose()

    def op_pyiceberg_append(self, args):
        """Appends rows; with create, first creates the namespace and table."""
        cat = self._catalog(args)
        try:
            data = rows_to_table(args["schema"], args.get("rows", []))
            ident = args["table"]
            if args.get("create"):
                ns = tuple(ident.split(".")[:-1])
                if ns not in [tuple(n) for n in cat.list_namespaces()]:
                    cat.create_namespace(ns)
                tbl = cat.create_table(ident, schema=data.schema, properties=args.get("properties") or {})
            else:
                tbl = cat.load_table(ident)
            tbl.append(data)
            return {"snapshot_id": tbl.current_snapshot().snapshot_id}
        finally:
            engine = getattr(cat, "engine", None)
            if engine is not None:
                engine.dispose()

    def op_pyiceberg_delete(self, args):
        cat = self._catalog(args)
        try:
            tbl = cat.load_table(args["table"])
            tbl.delete(delete_filter=args["filter"])
            snap = tbl.current_snapshot()
            return {"snapshot_id": snap.snapshot_id if snap else None}
        finally:
            engine = getattr(cat, "engine", None)
            if engine is not None:
                engine.dispose()

    def op_pyiceberg_snapshots(self, args):
        cat = self._catalog(args)
        try:
            tbl = cat.load_table(args["table"])
            out = []
            for s in tbl.metadata.snapshots:
                out.append(
                    {
                        "snapshot_id": s.snapshot_id,
                        "parent_snapshot_id": s.parent_snapshot_id,
                        "sequence_number": s.sequence_number,
                        "operation": s.summary.operation.value if s.summary else None,
                    }
                )
            return out
        finally:
            engine = getattr(cat, "engine", None)
            if engine is not None:
                engine.dispose()

    def op_delta_write(self, args):
        from deltalake import write_deltalake

        tbl = rows_to_table(args["schema"], args.get("rows", []))
        kwargs = {"mode": args.get("mode", "append")}
        if args.get("configuration"):
            kwargs["configuration"] = args["configuration"]
        if args.get("partition_by"):
            kwargs["partition_by"] = args["partition_by"]
        write_deltalake(args["path"], tbl, **kwargs)
        return self._version(args["path"])

    def op_delta_delete(self, args):
        from deltalake import DeltaTable

        dt = DeltaTable(args["path"])
        metrics = dt.delete(args.get("predicate"))
        return {"version": dt.version(), "metrics": _plain(metrics)}

    def op_delta_update(self, args):
        from deltalake import DeltaTable

        dt = DeltaTable(args["path"])
        metrics = dt.update(updates=args["updates"], predicate=args.get("predicate"))
        return {"version": dt.version(), "metrics": _plain(metrics)}

    def op_delta_merge(self, args):
        """MERGE of source rows (schema, rows) into the table: DeltaTable.merge
        with source alias s and target alias t, then, in order, an optional
        when_matched_delete(matched_delete), when_matched_update(matched_update)
        and when_not_matched_insert(not_matched_insert)."""
        from deltalake import DeltaTable

        src = rows_to_table(args["schema"], args.get("rows", []))
        dt = DeltaTable(args["path"])
        m = dt.merge(src, args["predicate"], source_alias="s", target_alias="t")
        if args.get("matched_delete") is not None:
            m = m.when_matched_delete(predicate=args["matched_delete"] or None)
        if args.get("matched_update"):
            m = m.when_matched_update(updates=args["matched_update"])
        if args.get("not_matched_insert"):
            m = m.when_not_matched_insert(updates=args["not_matched_insert"])
        metrics = m.execute()
        return {"version": dt.version(), "metrics": _plain(metrics)}

    def op_delta_cdf(self, args):
        from deltalake import DeltaTable

        dt = DeltaTable(args["path"])
        kwargs = {"starting_version": int(args.get("starting_version", 0))}
        if args.get("ending_version") is not None:
            kwargs["ending_version"] = int(args["ending_version"])
        return table_to_json(dt.load_cdf(**kwargs))

    def op_delta_scan(self, args):
        from deltalake import DeltaTable

        kwargs = {}
        if args.get("version") is not None:
            kwargs["version"] = int(args["version"])
        dt = DeltaTable(args["path"], **kwargs)
        import pyarrow as pa

        return table_to_json(pa.RecordBatchReader.from_stream(dt.to_pyarrow_dataset().scanner().to_reader()))

    def op_delta_history(self, args):
        from deltalake import DeltaTable

        return _plain(DeltaTable(args["path"]).history())

    def _version(self, path):
        from deltalake import DeltaTable

        return {"version": DeltaTable(path).version()}

    def op_exec(self, args):
        return run_exec(args, {})

    def close(self):
        pass


def _plain(v):
    """Makes engine metadata JSON-safe."""
    return json.loads(json.dumps(v, default=str))


def run_exec(args, env):
    """Runs a Python snippet; the value it leaves in `result` is answered.

    Arrow tables, record batch readers and Spark DataFrames are answered as rows;
    anything else must be JSON-serialisable.
    """
    g = dict(env)
    g.update({"args": args.get("vars", {}), "result": None, "rows_to_table": rows_to_table})
    exec(compile(args["code"], "<floe exec>", "exec"), g)
    res = g.get("result")
    if res is None:
        return None
    mod = type(res).__module__ or ""
    if mod.startswith("pyspark"):
        return table_to_json(res.toArrow())
    if mod.startswith("pyarrow") or hasattr(res, "__arrow_c_stream__"):
        return table_to_json(res)
    return res


# ---------------------------------------------------------------------------
# Protocol loop


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("spark", "py"):
        sys.stderr.write("usage: floe_worker.py spark|py\n")
        return 2
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    # Anything written to fd 1 from now on (Python prints, the JVM's System.out)
    # goes to stderr; only `proto` speaks the protocol.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    handler = SparkHandler() if sys.argv[1] == "spark" else PyHandler()
    proto.write(json.dumps({"id": 0, "ok": True, "result": {"ready": sys.argv[1]}}) + "\n")
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            req_id = None
            try:
                req = json.loads(line)
                req_id = req.get("id")
                op = req["op"]
                if op == "ping":
                    result = "pong"
                elif op == "shutdown":
                    proto.write(json.dumps({"id": req_id, "ok": True, "result": None}) + "\n")
                    break
                else:
                    fn = getattr(handler, "op_" + op, None)
                    if fn is None:
                        raise ValueError("unknown op %r for mode %s" % (op, sys.argv[1]))
                    result = fn(req.get("args") or {})
                answer = {"id": req_id, "ok": True, "result": result}
                text = json.dumps(answer, allow_nan=False)
            except Exception as e:  # noqa: BLE001 - every failure is answered
                answer = {
                    "id": req_id,
                    "ok": False,
                    "error": "%s: %s" % (type(e).__name__, str(e).strip()),
                    "trace": traceback.format_exc(),
                }
                text = json.dumps(answer, default=str)
            proto.write(text + "\n")
    finally:
        try:
            handler.close()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
