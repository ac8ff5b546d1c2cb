-- 0047: a face may come from a name written in the file alone (an MWG / Microsoft region:
-- "this is Jane Doe", with its box), with detection off or where the detector missed it.
-- Such a face has the region's box, no descriptor (NULL: nothing to cluster by; it joins
-- the person of its name, confirmed by the file), detector 'file region', and a crop cut
-- from the region. A detected face at the same place replaces it at the next scan.
-- face_scan holds, beside each detector version's row, a row of the pseudo-detector
-- 'file region' for each asset whose regions were read (faces: the faces they added).
ALTER TABLE face ALTER COLUMN descriptor DROP NOT NULL;
