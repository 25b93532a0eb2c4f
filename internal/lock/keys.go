package lock

// Key names for artifact id K. The hash tag {K} keeps the family on one Redis
// Cluster slot, so the Lua scripts may touch all of them.
func lockKey(id string) string         { return "pdfexport:{" + id + "}:lock" }
func fenceKey(id string) string        { return "pdfexport:{" + id + "}:fence" }
func doneKey(id string) string         { return "pdfexport:{" + id + "}:done" }
func releasedChannel(id string) string { return "pdfexport:{" + id + "}:released" }
