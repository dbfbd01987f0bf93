package results

import (
	"strings"
	"testing"
)

// TestAddLibrariesKeepsAFailedDeletion: merging a part that deleted the
// library with one whose deletion failed gives a library not deleted,
// with the failure, not "deleted at the end".
func TestAddLibrariesKeepsAFailedDeletion(t *testing.T) {
	t.Parallel()
	got := AddLibraries([]Library{{Name: "rlbench", Loaded: true, Deleted: true}}, []Library{{Name: "rlbench", Loaded: true, DeleteError: "BUSY"}})
	if len(got) != 1 || got[0].Deleted || got[0].DeleteError != "BUSY" || !strings.Contains(got[0].String(), "NOT deleted") {
		t.Errorf("AddLibraries(deleted, failed) = %+v (%s); want one library, not deleted, with the BUSY error", got, got[0])
	}
	got = AddLibraries([]Library{{Name: "rlbench", Loaded: true, Deleted: true}}, []Library{{Name: "rlbench"}})
	if len(got) != 1 || !got[0].Deleted {
		t.Errorf("AddLibraries(deleted, there before) = %+v; want deleted (the part that loaded it deleted it)", got)
	}
}
