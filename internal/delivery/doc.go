// Package delivery groups what brings a finished export to whoever asked
// for it outside the queue: signed callbacks to the URL an export named
// (callback) and the manuals a reader's download link may ask for
// (manuals).
package delivery
