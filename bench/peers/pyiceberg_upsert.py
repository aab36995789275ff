"""PyIceberg side of bench/peers.sh: the change rows applied with
Table.upsert (INSERT and UPDATE_AFTER rows, join on id) and Table.delete
(the DELETE rows' ids), timed from catalog load to the last commit; prints
one RESULT line (JSON).

  python pyiceberg_upsert.py WAREHOUSE TABLE CHANGES.parquet
"""
import sys
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq

from common import emit, peak_rss_mib


def main():
    warehouse, table, changes = sys.argv[1:4]
    from pyiceberg.catalog import load_catalog
    from pyiceberg.expressions import In

    src = pq.read_table(changes)
    t0 = time.time()
    cat = load_catalog("floe", type="sql", uri="sqlite:///" + warehouse + "/catalog.db", warehouse="file://" + warehouse)
    tbl = cat.load_table(table)
    kind = src.column("_change_type")
    up = src.filter(pc.invert(pc.equal(kind, "DELETE"))).drop_columns(["_change_type"])
    up = up.cast(tbl.schema().as_arrow())
    dels = src.filter(pc.equal(kind, "DELETE")).column("id").to_pylist()
    tbl.upsert(up, join_cols=["id"])
    if dels:
        tbl.delete(In("id", dels))
    statement_s = time.time() - t0
    emit(statement_s=statement_s, peak_rss_mib=peak_rss_mib())


if __name__ == "__main__":
    main()
