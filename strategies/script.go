package strategies

import (
	"crypto/sha1"
	"encoding/hex"
)

// NewScript returns a Script for src with its SHA-1 computed.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
}
