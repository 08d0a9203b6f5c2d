"""A Net's Jacobian and gradient in petsc4py's solvers.
  KSP: the Gauss-Newton step, the least-squares solution d of min ||J_theta d - r|| with KSPLSQR on the parameter
       Jacobian shell (MatMult and MatMultTranspose); checked by the normal equations ||J^T (J d - r)|| <= 1e-8 ||J^T r||.
  TAO: lmvm fits a Net to the outputs of a teacher Net of the same architecture (another seed) through an objective and
       gradient callback written with net.forward, loss.evaluate and net.backward; the loss must fall below 1e-3 of
       its starting value. The samples are the same at any number of ranks (formula_vec), so is the printed loss."""
from common import PETSc, petnet, comm, check, formula_vec

SPEC, SHAPE = "dense:4,tanh,dense:2", (2,)


def make_net(seed):
    net = petnet.Net().create(comm, spec=SPEC, input_shape=SHAPE)
    net.setSeed(seed)
    net.setUp()
    return net


def main():
    net, teacher = make_net(1), make_net(7)
    X, Y = net.createVecs(12 if comm.size == 1 else 6)  # 12 samples in all
    formula_vec(X, 0.7)
    T = Y.duplicate()
    teacher.forward(X, T)
    net.forward(X, Y)

    # KSP least squares with the parameter Jacobian
    JP = net.getJacobianP()
    r, d = JP.createVecLeft(), JP.createVecRight()
    formula_vec(r, 1.9)
    ksp = PETSc.KSP().create(comm)
    ksp.setOperators(JP)
    ksp.setType("lsqr")
    ksp.getPC().setType("none")
    ksp.setTolerances(rtol=1e-14, atol=1e-50, max_it=500)
    ksp.solve(r, d)
    res, Jtr, Jtres = r.duplicate(), d.duplicate(), d.duplicate()
    JP.mult(d, res)
    res.axpy(-1.0, r)
    JP.multTranspose(res, Jtres)
    JP.multTranspose(r, Jtr)
    rel = Jtres.norm() / Jtr.norm()
    check(ksp.getConvergedReason() > 0, "KSPLSQR converged (reason %d)" % ksp.getConvergedReason())
    check(rel <= 1e-8, "normal equations: %g" % rel)
    PETSc.Sys.Print("KSP lsqr on J_theta %s: converged, ||J^T(Jd - r)|| / ||J^T r|| below 1e-8" % (JP.getSize(),))
    ksp.destroy()

    # TAO minimising the loss over the parameters
    loss = petnet.Loss().create(comm, "mse")
    dY = Y.duplicate()

    def objective_gradient(tao, theta, G):
        net.setParameters(theta)
        net.forward(X, Y)
        f = loss.evaluate(Y, T, dY)
        G.zeroEntries()
        net.backward(dY, None, G)
        return f

    theta = net.createParameterVec()
    net.getParameters().copy(theta)
    G = theta.duplicate()
    f0 = objective_gradient(None, theta, G)
    tao = PETSc.TAO().create(comm)
    tao.setType("lmvm")
    tao.setObjectiveGradient(objective_gradient, G)
    tao.setSolution(theta)
    tao.setTolerances(gatol=1e-12, grtol=0, gttol=0)
    tao.setMaximumIterations(60)
    tao.solve()
    f = tao.getObjectiveValue()
    check(f < 1e-3 * f0, "TAO lmvm: loss %g from %g" % (f, f0))
    PETSc.Sys.Print("TAO lmvm: loss below 1e-3 of its start %.10f" % f0)
    tao.destroy()
    PETSc.Sys.Print("solvers: ok")


main()
