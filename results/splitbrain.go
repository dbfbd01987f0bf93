package results

import "fmt"

// SplitBrain is what the split-brain fault did to a Sentinel set-up: the
// master cut off from its sentinels and replicas while the clients kept
// their connections to it, a replica promoted, and the old master, once
// healed, made a replica of the new one, throwing away what it took
// meanwhile. Times are in seconds from the cut.
type SplitBrain struct {
	// OldMaster is the master that was cut off, NewMaster the replica the
	// sentinels promoted, host:port.
	OldMaster string `json:"old_master"`
	NewMaster string `json:"new_master"`
	// CutAtS is when the master was cut off, in seconds from the start of
	// the load.
	CutAtS float64 `json:"cut_at_s"`
	// PromotedS is when every sentinel named the new master and it
	// answered as a master; HealedS when the cut was healed; RejoinedS
	// when the old master answered as a replica.
	PromotedS float64 `json:"promoted_s"`
	HealedS   float64 `json:"healed_s"`
	RejoinedS float64 `json:"rejoined_s"`
	// OldIncrements is the writes (calls of every command the server flags
	// "write": INCR, SET, HSET, ZADD, EXPIRE, ..., in scripts too; the JSON
	// names are older than this count) the old master took as a master
	// after the cut, from every client of the server: all lost when it
	// rejoined. NewIncrements is those the new master took until then.
	OldIncrements int64 `json:"old_master_increments"`
	NewIncrements int64 `json:"new_master_increments"`
	// OldLastIncrementS is when the old master was last seen taking a
	// write as a master, NewFirstIncrementS when the new one was first;
	// -1 when not seen. Each is known to 20 ms.
	OldLastIncrementS  float64 `json:"old_master_last_increment_s"`
	NewFirstIncrementS float64 `json:"new_master_first_increment_s"`
	// BothMastersS is how long the two masters both took writes: from
	// the new master's first to the old master's last; 0 when they did not
	// overlap.
	BothMastersS float64 `json:"both_masters_s"`
}

func (b SplitBrain) text() string {
	return fmt.Sprintf("%s cut off at %.2fs, %s promoted %s after the cut, healed at %s, rejoined as a replica at %s; "+
		"the old master took %d writes after the cut (the last at %s), the new one %d (the first at %s): both took writes for %s",
		b.OldMaster, b.CutAtS, b.NewMaster, spanText(b.PromotedS), spanText(b.HealedS), spanText(b.RejoinedS),
		b.OldIncrements, spanText(b.OldLastIncrementS), b.NewIncrements, spanText(b.NewFirstIncrementS), spanText(b.BothMastersS))
}

// splitBrain checks b's figures for Validate.
func (c *checker) splitBrain(b *SplitBrain) {
	if b == nil {
		return
	}
	c.between("split_brain.cut_at_s", b.CutAtS, 0, MaxDurationS)
	for _, x := range []struct {
		field string
		s     float64
	}{{"promoted_s", b.PromotedS}, {"healed_s", b.HealedS}, {"rejoined_s", b.RejoinedS}, {"both_masters_s", b.BothMastersS}} {
		c.between("split_brain."+x.field, x.s, 0, MaxDurationS)
	}
	c.between("split_brain.old_master_last_increment_s", b.OldLastIncrementS, -1, MaxDurationS)
	c.between("split_brain.new_master_first_increment_s", b.NewFirstIncrementS, -1, MaxDurationS)
	c.count("split_brain.old_master_increments", b.OldIncrements)
	c.count("split_brain.new_master_increments", b.NewIncrements)
}
