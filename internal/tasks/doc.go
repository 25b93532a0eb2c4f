// Package tasks names every asynq task of pdfexport, as asynq's own README
// lays a tasks package out: each task type, its payload, its constructor
// and where its handler is.
//
//	type          payload                         constructor       handler
//	pdf:export    spec.Envelope (an enqueuer's)   NewExportTask     export.Handler (internal/tasks/export)
//	pdf:chapter   spec.ChapterTask (a manual's)   NewChapterTask    export.Handler.ChapterTasks
//	pdf:callback  Callback (a final export's)     NewCallbackTask   callback.Deliverer (internal/delivery/callback)
//
// The payloads of pdf:export and pdf:chapter are wire contracts with
// compatibility rules (envelope versions, strict decoding), so they and
// their validation stay together in internal/spec, beside the artifact
// keys they name. Every final state of an export goes through the one end
// of an attempt in internal/tasks/export (finish.go), which hands it to
// outcome.Finisher.
//
// This package is light on purpose: it imports the standard library,
// asynq and internal/spec only, so the public exportclient, which every
// API server links, names its task through it without pulling in the
// handlers' Chromium, storage or AWS code.
package tasks
