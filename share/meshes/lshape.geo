// The L-shaped domain [0,1]^2 minus (0.5,1] x (0.5,1]: an unstructured triangulation graded towards the re-entrant
// corner (0.5, 0.5), where the solution of an elliptic problem is singular (u ~ r^(2/3)).
// Regenerate (needs Gmsh 4, e.g. Debian's gmsh package; the tests only read lshape.msh):
//   gmsh -2 -format msh41 -o lshape.msh lshape.geo
hfar  = 0.05;  // element size far from the corner
hnear = 0.018; // element size at the corner
Point(1) = {0.0, 0.0, 0, hfar};
Point(2) = {1.0, 0.0, 0, hfar};
Point(3) = {1.0, 0.5, 0, hfar};
Point(4) = {0.5, 0.5, 0, hnear};
Point(5) = {0.5, 1.0, 0, hfar};
Point(6) = {0.0, 1.0, 0, hfar};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 5};
Line(5) = {5, 6};
Line(6) = {6, 1};
Curve Loop(1) = {1, 2, 3, 4, 5, 6};
Plane Surface(1) = {1};
// grade linearly from hnear at the corner to hfar at distance 0.35
Field[1] = Distance;
Field[1].PointsList = {4};
Field[2] = Threshold;
Field[2].InField = 1;
Field[2].SizeMin = hnear;
Field[2].SizeMax = hfar;
Field[2].DistMin = 0.0;
Field[2].DistMax = 0.35;
Background Field = 2;
Mesh.MeshSizeExtendFromBoundary = 0;
Mesh.MeshSizeFromPoints = 0;
Mesh.Algorithm = 6;    // Frontal-Delaunay
Mesh.RandomSeed = 1;
Physical Curve("boundary", 1) = {1, 2, 3, 4, 5, 6};
Physical Surface("domain", 2) = {1};
