"""Spark local[2] side of bench/peers.sh: MERGE INTO (copy-on-write or
merge-on-read, as the table's properties say) or create_changelog_view with
identifier columns, timed as a statement in a warm session; prints one RESULT
line (JSON): statement_s, start_s (JVM and session start), warmup_s,
peak_rss_mib (this process and its JVM) and the result's rows.

  python spark.py merge WAREHOUSE TABLE CHANGES.parquet JARS DRIVER_MEMORY
  python spark.py changelog WAREHOUSE TABLE START_SNAPSHOT_ID JARS DRIVER_MEMORY
"""
import sys
import time

from common import T0, emit, peak_rss_mib

COLS = ["id", "customer", "status", "amount", "qty", "created", "score"]


def session(warehouse, jars, mem):
    from pyspark.sql import SparkSession

    p = "spark.sql.catalog.floe"
    b = (
        SparkSession.builder.master("local[2]")
        .appName("floe-peers")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(p, "org.apache.iceberg.spark.SparkCatalog")
        .config(p + ".type", "jdbc")
        .config(p + ".uri", "jdbc:sqlite:" + warehouse + "/catalog.db")
        .config(p + ".jdbc.schema-version", "V1")
        .config(p + ".warehouse", "file://" + warehouse)
        .config(p + ".cache-enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.driver.memory", mem)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.local.dir", warehouse + "/../spark-local")
    )
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def merge_sql(target, source):
    sets = ", ".join("t.%s = s.%s" % (c, c) for c in COLS[1:])
    cols = ", ".join(COLS)
    vals = ", ".join("s." + c for c in COLS)
    return (
        "MERGE INTO floe.%s t USING %s s ON t.id = s.id "
        "WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET %s "
        "WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT (%s) VALUES (%s)"
    ) % (target, source, sets, cols, vals)


def main():
    op, warehouse, table, arg, jars, mem = sys.argv[1:7]
    spark = session(warehouse, jars, mem)
    start_s = time.time() - T0
    w0 = time.time()
    if op == "merge":
        spark.read.parquet(arg).createOrReplaceTempView("changes")
        # Warm-up: the same statement shape on the empty table bench.plain.
        spark.sql("CREATE OR REPLACE TEMP VIEW warm AS SELECT * FROM changes WHERE id % 100 = 3")
        spark.sql(merge_sql("bench.plain", "warm"))
        warmup_s = time.time() - w0
        t0 = time.time()
        spark.sql(merge_sql(table, "changes"))
        statement_s = time.time() - t0
        rows = None
    else:
        spark.sql(
            "CALL floe.system.create_changelog_view(table => 'bench.plain', changelog_view => 'warm', "
            "identifier_columns => array('id'), compute_updates => true)"
        )
        spark.sql("SELECT count(*) FROM warm").collect()
        warmup_s = time.time() - w0
        t0 = time.time()
        spark.sql(
            "CALL floe.system.create_changelog_view(table => '%s', changelog_view => 'cl', "
            "options => map('start-snapshot-id', '%s'), identifier_columns => array('id'), "
            "compute_updates => true)" % (table, arg)
        )
        got = spark.sql(
            "SELECT _change_type, count(*) AS n, sum(id) AS ids FROM cl GROUP BY _change_type"
        ).collect()
        statement_s = time.time() - t0
        rows = {r["_change_type"]: [r["n"], r["ids"]] for r in got}
    peak = peak_rss_mib()
    spark.stop()
    emit(statement_s=statement_s, start_s=start_s, warmup_s=warmup_s, peak_rss_mib=peak, rows=rows)


if __name__ == "__main__":
    main()
