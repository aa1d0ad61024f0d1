package pgsnapshots_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/pgsnapshots"
	"github.com/polyloop/polyloop/polylooptest"
)

var schemas atomic.Int64

func TestConformance(t *testing.T) {
	dsn := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	base := fmt.Sprintf("snap_%d", time.Now().UnixNano()%1e9)
	names := map[polyloop.BlobStore]string{}
	open := func(t testing.TB, schema string) *pgsnapshots.Store {
		s, err := pgsnapshots.Open(context.Background(), dsn, pgsnapshots.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		names[s] = schema
		return s
	}
	polylooptest.TestBlobStore(t, polylooptest.BlobStoreHarness{
		New: func(t testing.TB) polyloop.BlobStore {
			schema := fmt.Sprintf("%s_%d", base, schemas.Add(1))
			t.Cleanup(func() {
				if c, err := pgx.Connect(context.Background(), dsn); err == nil {
					c.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
					c.Close(context.Background())
				}
			})
			return open(t, schema)
		},
		Reopen: func(t testing.TB, s polyloop.BlobStore) polyloop.BlobStore {
			s.(*pgsnapshots.Store).Close()
			return open(t, names[s])
		},
	})
}
