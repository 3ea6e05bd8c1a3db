package monitor

// oldDetailNames are the names an event kind's detail had before each
// meaning got one name across all events (issue 26): old name -> new.
// Events recorded in a History before then are read back under the new
// names, so that the timelines, the failover table and the live page read
// one name only.
var oldDetailNames = map[string]map[string]string{
	kindWindowClosed:    {"start": "windowStart", "end": "windowEnd"},
	kindRestoreFinished: {"tookMs": "durationMs"},
	kindTaskFailedOver:  {"replica": "fromReplica"},
	kindTaskRevoked:     {"lastRecord": "lastRecordAt"},
}

// upgradeDetail renames, in an event read back from disk, the detail
// fields an older Braid wrote under another name.
func upgradeDetail(ev *Event) {
	for old, name := range oldDetailNames[ev.Kind] {
		v, ok := ev.Detail[old]
		if !ok {
			continue
		}
		if _, has := ev.Detail[name]; !has {
			ev.Detail[name] = v
		}
		delete(ev.Detail, old)
	}
}
