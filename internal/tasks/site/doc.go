// Package site reads a manual's chapters from a documentation site: it
// fetches the start page, finds the site's own navigation (the markup of
// the generator that built it, a sitemap, or a CSS selector), and lists
// the pages it links to, in order, with their titles. With no revision
// given it also derives each chapter's revision from its content, so that
// a chapter is printed again only when what it shows changed.
//
// It fetches through the client it is given (the worker's, which dials
// only what ALLOWED_HOSTS allows) and knows nothing of rendering.
package site
