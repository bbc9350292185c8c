package testpg

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestSchema(t *testing.T) {
	for range 2 {
		u := Schema(t)
		c, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		var sp string
		if err := c.QueryRow(context.Background(), "SELECT current_schema()").Scan(&sp); err != nil || sp == "public" {
			t.Fatalf("schema %q, %v", sp, err)
		}
		c.Close(context.Background())
	}
	if u := Database(t); u == "" {
		t.Fatal("no database")
	}
}
