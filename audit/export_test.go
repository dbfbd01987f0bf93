package audit

import "time"

// SeedTTL counts one TTL into f's buckets, for the tests of package audit_test.
func SeedTTL(f *Findings, ttl time.Duration) { f.TTL.add(ttl) }
