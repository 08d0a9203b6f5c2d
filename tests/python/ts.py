"""A Net as the right-hand side of a petsc4py TS, trained through TSAdjoint from Python.
  du/dt = N(u; theta) with N = dense:5,tanh,dense:3 on samples of 3 values (8 samples, split over the ranks), from
  u(0) given by a formula, to T = 0.5 with 10 steps of the TS type -ts_type (rk: the RHS form; beuler, cn: the implicit
  form, solved with the Jacobian shell). The loss L = 1/2 |u(T)|^2; TSAdjointSolve gives dL/dtheta (mu) and dL/du(0)
  (lambda). Both are checked against central differences along a direction of the parameters and of u(0)
  (relative error <= 1e-6), the same on any number of ranks."""
from common import PETSc, petnet, comm, check, formula_vec, opts

# fixed steps (the differences must follow the same steps), rk 4 (explicit); the command line may say otherwise
for key, value in (("ts_adapt_type", "none"), ("ts_rk_type", "4")):
    if not opts.hasName(key):
        opts[key] = value


def loss_and_state(ts, net, u0):
    u = u0.copy()
    ts.setTime(0.0)
    ts.setStepNumber(0)
    ts.setTimeStep(0.05)
    ts.solve(u)
    return 0.5 * u.dot(u), u


def make_ts(net, u0, save):
    ts = PETSc.TS().create(comm)
    ts.setType("rk")
    ts.setProblemType(PETSc.TS.ProblemType.NONLINEAR)
    ts.setFromOptions()  # -ts_type beuler|cn ...
    petnet.tsSetRHS(ts, net, u0)
    petnet.tsCheckAdjoint(ts)
    ts.setMaxTime(0.5)
    ts.setMaxSteps(10)
    ts.setExactFinalTime(PETSc.TS.ExactFinalTime.MATCHSTEP)
    if ts.getType() != "rk":
        snes = ts.getSNES()
        snes.setTolerances(rtol=1e-13, atol=1e-14)
        snes.getKSP().setTolerances(rtol=1e-14, atol=1e-15)
    if save:
        petnet.tsSetSaveTrajectory(ts)
    return ts


def main():
    net = petnet.Net().create(comm, spec="dense:5,tanh,dense:3", input_shape=(3,))
    net.setSeed(4)
    net.setUp()
    u0, _ = net.createVecs(8 if comm.size == 1 else 4)
    formula_vec(u0, 0.9)

    ts, fdts = make_ts(net, u0, True), make_ts(net, u0, False)  # the second without a trajectory, for the differences
    L, uT = loss_and_state(ts, net, u0)
    lam, mu = uT.copy(), net.createParameterVec()  # dL/du(T) = u(T); mu starts at 0
    mu.zeroEntries()
    ts.setCostGradients([lam], [mu])
    ts.adjointSolve()

    theta = net.getParameters()
    v = formula_vec(theta.duplicate(), 1.3)
    w = formula_vec(u0.duplicate(), 2.1)
    h = 1e-5
    base = theta.copy()
    Ls = []
    for s in (1, -1):
        theta.waxpy(s * h, v, base)
        net.setParameters(theta)
        Ls.append(loss_and_state(fdts, net, u0)[0])
    net.setParameters(base)
    fd_theta = (Ls[0] - Ls[1]) / (2 * h)
    Lu = [loss_and_state(fdts, net, u0 + s * h * w)[0] for s in (1, -1)]
    fd_u = (Lu[0] - Lu[1]) / (2 * h)
    ad_theta, ad_u = mu.dot(v), lam.dot(w)
    e_theta = abs(ad_theta - fd_theta) / abs(fd_theta)
    e_u = abs(ad_u - fd_u) / abs(fd_u)
    PETSc.Sys.Print("ts %s: L %.10f  dL/dtheta.v %.8f (fd %.8f, rel. error %.1e)  dL/du0.w %.8f (fd %.8f, %.1e)" % (ts.getType(), L, ad_theta, fd_theta, e_theta, ad_u, fd_u, e_u))
    check(e_theta <= 1e-6 and e_u <= 1e-6, "TSAdjoint gradients differ from finite differences: %.2e %.2e" % (e_theta, e_u))
    for o in (ts, fdts, lam, mu, uT, v, w, base, u0):
        o.destroy()
    net.destroy()


main()
