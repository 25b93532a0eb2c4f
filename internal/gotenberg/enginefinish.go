package gotenberg

import (
	"context"
)

// engineFinishSteps are the metadata and encryption fields of the split
// route as one step after the others, with the merge route's finish.
func engineFinishSteps(f *form) []postStep {
	for _, k := range []string{"watermarkSource", "stampSource"} {
		if f.has(k) {
			f.errs = append(f.errs, unsupported(k, "the split route draws no marks; a conversion takes a text watermark").Error())
		}
	}
	props := engineMetadata(f)
	user, owner := passwords(f, false)
	perms := permissionBits(f)
	if len(props) == 0 && owner == "" {
		return nil
	}
	return []postStep{{order: stepEncrypt, run: func(ctx context.Context, files []upload) ([]upload, error) {
		out := make([]upload, 0, len(files))
		for _, in := range files {
			data, err := finish(ctx, in.name, in.data, props, user, owner, perms)
			if err != nil {
				return nil, err
			}
			out = append(out, upload{name: in.name, data: data})
		}
		return out, nil
	}}}
}
