package gotenberg

import (
	"net/http"

	"github.com/pdfexport/pdfexport/exportclient"
)

// Webhooks delivers a conversion's PDF to a caller's webhook.
type Webhooks interface{}

// webhook is the asynchronous form's headers.
type webhook struct {
	url, errorURL, method, errorMethod string
	extraHeaders                       map[string]string
}

const webhookURLHeader = "Gotenberg-Webhook-Url"

// webhookOf reads the webhook headers of r, if any.
func webhookOf(r *http.Request) (webhook, bool, error) {
	if r.Header.Get(webhookURLHeader) == "" && r.Header.Get("Gotenberg-Webhook-Error-Url") == "" {
		return webhook{}, false, nil
	}
	return webhook{}, true, &httpError{status: http.StatusNotImplemented,
		msg: "The header '" + webhookURLHeader + "' is not supported by pdfexport yet: call without it and read the PDF from the response"}
}

func (h *handler) deliverLater(w http.ResponseWriter, r *http.Request, p exportclient.Payload, hook webhook) {
	writeError(w, &httpError{status: http.StatusNotImplemented, msg: "webhooks are not supported"})
}
