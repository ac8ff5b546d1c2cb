"""People: faces found on this machine, clustered, named only by a person
(X2). :mod:`.detect` (dlib), :mod:`.people` (scan, cluster, naming),
:mod:`.queries` (SQL, migration 0022)."""
