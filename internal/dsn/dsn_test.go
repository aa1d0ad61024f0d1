package dsn

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Every form below is one pgx reads a password from (the test checks that
// it does): Redact must leave none of the password in its output.
func TestRedactHidesEveryPasswordPgxReads(t *testing.T) {
	for _, tc := range []struct{ dsn, password, want string }{
		{"postgres://alice:s3cretpw@db.example:5432/runs", "s3cretpw", "postgres://alice:xxxxx@db.example:5432/runs"},
		{"postgresql://alice:s3cr%2Ftpw@db/runs", "s3cr/tpw", "postgresql://alice:xxxxx@db/runs"},
		{"postgres://alice:pw1@ss@db/runs", "pw1", "postgres://alice:xxxxx@db/runs"},
		{"postgres://alice:pa?ss@db/runs", "pa?ss", "postgres://alice:xxxxx@db/runs"},
		{"postgres://alice@db/runs?password=s3cretpw&sslmode=disable", "s3cretpw", "postgres://alice@db/runs?password=xxxxx&sslmode=disable"},
		{"postgres://db/runs?sslmode=disable&pass%77ord=s3cretpw", "s3cretpw", "postgres://db/runs?sslmode=disable&pass%77ord=xxxxx"},
		{"host=db user=alice password=s3cretpw dbname=runs", "s3cretpw", "host=db user=alice password=xxxxx dbname=runs"},
		{"host=db password = s3cretpw dbname=runs", "s3cretpw", "host=db password = xxxxx dbname=runs"},
		{"host=db password='s3cret pw' dbname=runs", "s3cret pw", "host=db password=xxxxx dbname=runs"},
		{`host=db password='it\'s secret' dbname=runs`, "it's secret", "host=db password=xxxxx dbname=runs"},
		{`host=db password=back\ slash dbname=runs`, "back slash", "host=db password=xxxxx dbname=runs"},
	} {
		cfg, err := pgconn.ParseConfig(tc.dsn)
		if err != nil {
			t.Fatalf("pgx does not read %q: %v", tc.dsn, err)
		}
		if cfg.Password != tc.password {
			t.Fatalf("pgx reads the password %q from %q, the test says %q", cfg.Password, tc.dsn, tc.password)
		}
		got := Redact(tc.dsn)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
		if strings.Contains(got, tc.password) {
			t.Errorf("Redact(%q) = %q shows the password", tc.dsn, got)
		}
	}
}

// Strings pgx may refuse still lose what looks like a password; the rest
// is left alone.
func TestRedactMalformedAndOther(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"POSTGRES://alice:s3cretpw@db/runs", "POSTGRES://alice:xxxxx@db/runs"},
		{"postgres://alice:pa/ss@db/runs", "postgres://alice:xxxxx@db/runs"},
		{"postgres://alice:a/b@c@db/runs", "postgres://alice:xxxxx@db/runs"},
		{"host=db password='unterminated secret", "host=db password=xxxxx"},
		{"not a dsn password=hunter22 at all", "not a dsn password=xxxxx at all"},
		{"sqlite:./.polyloop/polyloop.db", "sqlite:./.polyloop/polyloop.db"},
		{"mysql://u:secret@h/db", "mysql://u:xxxxx@h/db"},
		{"postgres://alice@db/runs?application_name=a@b", "postgres://alice@db/runs?application_name=a@b"},
		{"", ""},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("postgres://alice:s3cretpw@db/runs?password=x")
	f.Add("host=db password='a b' user=c")
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := pgconn.ParseConfig(s)
		if err != nil || len(cfg.Password) < 4 {
			return
		}
		out := Redact(s)
		if strings.Count(s, cfg.Password) == 1 && strings.Contains(out, cfg.Password) && !strings.Contains(Mask, cfg.Password) {
			t.Fatalf("Redact(%q) = %q shows the password %q", s, out, cfg.Password)
		}
		if again, err := pgconn.ParseConfig(out); err == nil && again.Password == cfg.Password {
			t.Fatalf("pgx reads the password %q from Redact(%q) = %q", cfg.Password, s, out)
		}
	})
}
