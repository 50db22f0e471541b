package usecasekind

import (
	"slices"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Codes returns the catalogue entries of the codes only the usecase kind
// reports, from this package or its live half (grants.Coded). Codes it
// shares with the core, an auth strategy or another kind are catalogued by
// the core (diag.Catalog).
func (Kind) Codes() []diag.Entry { return slices.Clone(codes) }

var codes = []diag.Entry{
	{Code: diag.UsecaseUnknown, Phase: diag.PhaseCompile,
		Meaning: "A usecase grant names a key the application did not register, or names none.",
		Fix:     "Register the operation with usecase.Register in the application's main, or correct the key."},
}

var _ grants.Coded = Kind{}
