package monitor

import (
	"bytes"
	"encoding/json"
)

// oldDetailNames are the names an event kind's detail had before each
// meaning got one name across all events (issue 26): old name -> new.
// Events recorded in a History before then are read back under the new
// names, so that the detail structs (detail.go) have one name only.
var oldDetailNames = map[string]map[string]string{
	kindWindowClosed:    {"start": "windowStart", "end": "windowEnd"},
	kindRestoreFinished: {"tookMs": "durationMs"},
	kindTaskFailedOver:  {"replica": "fromReplica"},
	kindTaskRevoked:     {"lastRecord": "lastRecordAt"},
}

// upgradeDetail returns a kind's raw detail with the fields an older
// Braid wrote under another name renamed, a new name winning over an old
// one; raw itself when it has none. It works on the JSON object, before
// the detail is decoded into its struct, which would drop the old names.
func upgradeDetail(kind string, raw json.RawMessage) json.RawMessage {
	names := oldDetailNames[kind]
	if !mentionsAny(raw, names) {
		return raw
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw
	}
	for old, name := range names {
		v, ok := obj[old]
		if !ok {
			continue
		}
		if _, has := obj[name]; !has {
			obj[name] = v
		}
		delete(obj, old)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// mentionsAny reports whether raw may hold one of the old names: most
// details read back (every one written since) hold none, and need not be
// decoded twice.
func mentionsAny(raw []byte, names map[string]string) bool {
	for old := range names {
		if bytes.Contains(raw, []byte(`"`+old+`"`)) {
			return true
		}
	}
	return false
}
