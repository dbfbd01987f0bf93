package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// valueBytes is how much of a string's value the audit reads: enough for
// any integer counter, and a readable start of anything else.
const valueBytes = 64

// detailed reports whether immortal keys need a second look: their value
// read, a sample described, or a fix sent.
func (a *auditor) detailed() bool {
	return a.o.Limit > 0 || a.o.FixTTL > 0 && !a.o.DryRun || a.wantImmortalSample()
}

func (a *auditor) wantImmortalSample() bool { return len(a.immortalSample) < a.o.Sample }

func (a *auditor) wantLockedOutSample() bool {
	return a.o.Limit > 0 && len(a.lockedOutSample) < a.o.Sample
}

// keyDetail is the second look at one immortal key; nil commands were not
// sent.
type keyDetail struct {
	key    string
	idle   *redis.DurationCmd
	typ    *redis.StatusCmd
	value  *redis.StringCmd
	expire *redis.BoolCmd
}

// detail looks closer at the immortal keys of one batch, in one pipeline:
// per key OBJECT IDLETIME first (the reads after it reset the idle time),
// TYPE, GETRANGE, then EXPIRE ... NX. Only what is needed is sent: the
// sample stops reading once it is full.
func (a *auditor) detail(ctx context.Context, n Node, nr *NodeReport, keys []string) error {
	pipe := n.Pipeline()
	details := make([]keyDetail, len(keys))
	sampling := 0 // keys queued for the immortal sample
	for i, key := range keys {
		d := keyDetail{key: key}
		sample := a.wantImmortalSample() && len(a.immortalSample)+sampling < a.o.Sample
		if sample {
			sampling++
		}
		if sample || a.wantLockedOutSample() {
			d.idle = pipe.ObjectIdleTime(ctx, key)
		}
		if sample {
			d.typ = pipe.Type(ctx, key)
		}
		if sample || a.o.Limit > 0 {
			d.value = pipe.GetRange(ctx, key, 0, valueBytes-1)
		}
		if a.o.FixTTL > 0 && !a.o.DryRun {
			d.expire = pipe.ExpireNX(ctx, key, a.o.FixTTL)
		}
		details[i] = d
	}
	began := time.Now()
	cmds, err := pipe.Exec(ctx)
	a.lat[2].record(time.Since(began))
	if err != nil {
		if ferr := detailError(cmds); ferr != nil {
			return ferr
		}
	}
	for _, d := range details {
		a.account(nr, d)
	}
	return nil
}

// account counts one key's second look, and samples it.
func (a *auditor) account(nr *NodeReport, d keyDetail) {
	if d.expire != nil {
		if d.expire.Val() {
			nr.Fixed++
		} else {
			nr.FixSkipped++
		}
	}
	var value *string
	if d.value != nil && d.value.Err() == nil {
		v := d.value.Val()
		value = &v
	}
	s := Sample{Node: nr.Addr, Key: d.key, Type: "string", Value: value, IdleS: idleOf(d.idle)}
	if d.typ != nil {
		s.Type = d.typ.Val()
		if s.Type != "string" {
			s.Value = nil
		}
		a.immortalSample = append(a.immortalSample, s)
	}
	if a.o.Limit > 0 && value != nil {
		if count, err := strconv.ParseInt(*value, 10, 64); err == nil && count >= a.o.Limit {
			nr.LockedOut++
			if a.wantLockedOutSample() {
				s.Type = "string"
				a.lockedOutSample = append(a.lockedOutSample, s)
			}
		}
	}
}

// idleOf is OBJECT IDLETIME's reply in seconds, nil when it was not sent or
// not answered.
func idleOf(cmd *redis.DurationCmd) *int64 {
	if cmd == nil || cmd.Err() != nil {
		return nil
	}
	s := int64(cmd.Val() / time.Second)
	return &s
}

// detailError returns the first error of the second look that is not about
// one key: WRONGTYPE (GETRANGE of a non-string), a key gone (OBJECT's nil)
// and an LFU policy's refusal of OBJECT IDLETIME are expected.
func detailError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		err := c.Err()
		if err == nil || errors.Is(err, redis.Nil) || strings.HasPrefix(err.Error(), "WRONGTYPE") ||
			c.Name() == "object" && strings.Contains(err.Error(), "LFU") {
			continue
		}
		name := strings.ToLower(c.Name())
		if name == "expire" {
			name = "expire nx"
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
