// Package dataset reads and writes the files of a sweep directory:
//
//	steps.csv      one row per measured run (StepRow), appended and fsynced
//	               row by row; also the resume journal (Journal)
//	knees.csv      one row per config and round plus one aggregate row per
//	               config with round "all" (KneeRow), rebuilt with BuildKnees
//	raw/...        Fortio result JSON, payload stripped, run CA path replaced, gzip (WriteRawGzip)
//	metadata.json  what is needed to reproduce the sweep (Metadata)
//
// Each CSV schema is declared once, as an ordered list of columns bound to
// struct fields, and used by both writer and reader. Conventions: an empty
// float cell is NaN ("not measured"); list cells are semicolon separated;
// times are RFC 3339 UTC; seq counts a search's steps from 0; rates of 0
// mean "none" (no lowest fail, no latency knee, no censoring bound). Steps of
// kind "descend" lie below the ladder (knee.Options.Floor, plan FloorRPS).
//
// Files other than steps.csv are replaced atomically (temporary file, fsync,
// rename), so a crash leaves either the old or the new version.
package dataset
