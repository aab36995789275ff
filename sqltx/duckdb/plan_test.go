//go:build cgo

package duckdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/sqltx"
)

// TestAnalyze checks the classification of queries, rule by rule: what
// is row-local (maintained from the changes) and what is rebuilt in full,
// with the reason.
func TestAnalyze(t *testing.T) {
	ctx := context.Background()
	s, err := sqltx.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		query  string
		tables string
		reason string // "" = row-local
	}{
		// Row-local: projection, expressions, WHERE, scalar functions, CASE, casts.
		{"SELECT * FROM shop.orders", "shop.orders", ""},
		{"SELECT id, amount * 2 AS a2 FROM shop.orders WHERE status = 'open'", "shop.orders", ""},
		{"SELECT id, upper(customer) c, CASE WHEN amount > 10 THEN 'big' ELSE 'small' END AS size FROM shop.orders o WHERE o.amount BETWEEN 1 AND 5", "shop.orders", ""},
		{"SELECT id, CAST(amount AS DOUBLE) / 3 AS third, amount::VARCHAR s, coalesce(customer, 'none') FROM shop.orders WHERE customer IS NOT NULL AND id IN (1, 2, 3)", "shop.orders", ""},
		{"SELECT id, customer LIKE 'a%' AS a, length(customer) AS n, list_transform([1, 2], x -> x + id) AS l FROM shop.orders WHERE NOT (amount < 0 OR amount IS NULL)", "shop.orders", ""},
		{"SELECT * EXCLUDE (customer) FROM shop.orders", "shop.orders", ""},
		// Full rebuilds, with the reason.
		{"SELECT customer, sum(amount) FROM shop.orders GROUP BY customer", "shop.orders", "GROUP BY"},
		{"SELECT count(*) FROM shop.orders", "shop.orders", "aggregate (count_star"},
		{"SELECT max(amount) FROM shop.orders", "shop.orders", "aggregate (max"},
		{"SELECT customer FROM shop.orders GROUP BY ALL", "shop.orders", "GROUP BY"},
		{"SELECT o.id, c.name FROM shop.orders o RIGHT JOIN shop.customers c ON o.customer = c.id", "shop.orders,shop.customers", "join"},
		{"SELECT id, row_number() OVER (ORDER BY amount) FROM shop.orders", "shop.orders", "window function"},
		{"SELECT * FROM shop.orders ORDER BY amount", "shop.orders", "ORDER BY"},
		{"SELECT * FROM shop.orders LIMIT 10", "shop.orders", "LIMIT"},
		{"SELECT DISTINCT customer FROM shop.orders", "shop.orders", "DISTINCT"},
		{"SELECT id, random() AS r FROM shop.orders", "shop.orders", "not deterministic"},
		{"SELECT id, now() AS t FROM shop.orders", "shop.orders", "not deterministic"},
		{"SELECT * FROM shop.orders WHERE id IN (SELECT id FROM shop.vip)", "shop.orders,shop.vip", "subquery"},
		{"SELECT * FROM shop.orders UNION ALL SELECT * FROM shop.archive", "shop.orders,shop.archive", "set operation"},
		{"WITH big AS (SELECT * FROM shop.orders WHERE amount > 10) SELECT * FROM big", "shop.orders", "WITH"},
		{"SELECT * FROM (SELECT * FROM shop.orders) s", "shop.orders", "subquery"},
		{"SELECT customer FROM shop.orders QUALIFY row_number() OVER (PARTITION BY customer ORDER BY id) = 1", "shop.orders", "QUALIFY"},
		{"SELECT id, no_such_function(amount) FROM shop.orders", "shop.orders", "does not know"},
	} {
		p, err := sqltx.Analyze(ctx, s, c.query)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		if got := strings.Join(p.Tables, ","); got != c.tables {
			t.Errorf("%s: tables %s, want %s", c.query, got, c.tables)
		}
		rule, reason := p.Rule(true)
		switch {
		case c.reason == "" && rule != sqltx.RuleRowLocal:
			t.Errorf("%s: rule %s (%s), want row-local", c.query, rule, reason)
		case c.reason != "" && (rule != sqltx.RuleFull || !strings.Contains(reason, c.reason)):
			t.Errorf("%s: rule %s (%s), want full because of %s", c.query, rule, reason, c.reason)
		}
		if rule, _ := p.Rule(false); c.reason == "" && rule != sqltx.RuleRowLocalAppend {
			t.Errorf("%s: without key, rule %s, want %s", c.query, rule, sqltx.RuleRowLocalAppend)
		}
	}
}

// TestAnalyzeErrors: queries floe refuses, with what and where.
func TestAnalyzeErrors(t *testing.T) {
	ctx := context.Background()
	s, err := sqltx.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ query, want string }{
		{"SELEC id FROM shop.orders", `syntax error at or near "SELEC" (line 1, column 1)`},
		{"SELECT id FROM shop.orders WHERE", "syntax error at end of input"},
		{"SELECT id\nFROM shop.orders WHERE id = = 1", `syntax error at or near "=" (line 2, column 29)`},
		{"SELECT id FROM orders", `table "orders": name Iceberg tables as namespace.table (line 1, column 16)`},
		{"SELECT 1", "reads no Iceberg table"},
		{"DELETE FROM shop.orders", "want a SELECT query"},
		{"SELECT 1 FROM shop.a; SELECT 2 FROM shop.b", "want one SELECT query, got 2 statements"},
		{"SELECT * FROM a.b.c", "nested namespaces"},
	} {
		_, err := sqltx.Analyze(ctx, s, c.query)
		if err == nil || !errors.Is(err, sqltx.ErrInvalidQuery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want ErrInvalidQuery with %q", c.query, err, c.want)
		}
	}
}
