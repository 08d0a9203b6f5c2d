"""The Jacobians of a Net as petsc4py Mats: <J v, w> = <v, J^T w> for J = NetGetJacobian and NetGetJacobianP
(MatMult / MatMultTranspose), mult equals net.jvp, multTranspose equals net.backward, and the gradient of an MSE
loss (net.backward) against central finite differences. The Net is built from options with the prefix "py_"
(-py_net_layers or -py_net_graph, -py_net_seed), so the prefix and set-from-options are exercised too. Also the
reference counts of the wrappers and their state after net.destroy(). Prints one line per check."""
from common import PETSc, petnet, comm, opts, check, random_vec


def main():
    net = petnet.Net().create(comm, input_shape=opts.getString("input_shape", "5"), prefix="py_")
    net.setFromOptions()
    net.setUp()
    spec = net.getSpec()
    given = opts.getString("py_net_layers", opts.getString("py_net_graph", ""))
    check(spec.replace(" ", "") == given.replace(" ", ""), "spec from the options: " + spec)
    X, Y = net.createVecs(3 + comm.rank)  # an uneven batch: 3 samples on rank 0, 4 on rank 1
    random_vec(X, 11)
    net.forward(X, Y)
    PETSc.Sys.Print("net %s: %d parameters, batch %s, output shape %s" %
                    (spec, net.getNumParameters(), net.getBatchSize(), net.getOutputShape()))

    J, JP = net.getJacobian(), net.getJacobianP()
    check(isinstance(J, PETSc.Mat) and J.getType() == "shell", "a petsc4py MATSHELL")
    check(J.getRefCount() == 2 and J.handle == net.getJacobian().handle, "the Net's shell, referenced once more")
    for name, A, seed in (("J", J, 21), ("J_theta", JP, 31)):
        v, w = A.createVecRight(), A.createVecLeft()
        random_vec(v, seed)
        random_vec(w, seed + 1)
        Av, Atw = A.createVecLeft(), A.createVecRight()
        A.mult(v, Av)
        A.multTranspose(w, Atw)
        lhs, rhs = Av.dot(w), v.dot(Atw)
        err = abs(lhs - rhs) / max(abs(lhs), 1.0)
        check(err < 1e-12, "dot-product test of %s: %g" % (name, err))
        # the same products through the Net
        Av2, Atw2 = A.createVecLeft(), A.createVecRight()
        if name == "J":
            net.jvp(v, None, Av2)
            net.backward(w, Atw2, None)
        else:
            net.jvp(None, v, Av2)
            Atw2.zeroEntries()
            net.backward(w, None, Atw2)
        Av2.axpy(-1.0, Av)
        Atw2.axpy(-1.0, Atw)
        check(Av2.norm() == 0 and Atw2.norm() == 0, "%s: MatMult is NetJVP, MatMultTranspose NetBackward" % name)
        PETSc.Sys.Print("dot-product test %-8s size %s: relative error below 1e-12" % (name, A.getSize()))

    # gradient of f(theta) = mse(net(X; theta), T) against central differences along a random direction
    loss = petnet.Loss().create(comm, "mse")
    T, dY = Y.duplicate(), Y.duplicate()
    random_vec(T, 41)
    theta = net.getParameters()
    theta0, d, G = theta.copy(), random_vec(net.createParameterVec(), 51), net.createParameterVec()

    def f(h):
        theta.waxpy(h, d, theta0)  # theta is the Net's own parameter Vec: changing it changes the network
        net.forward(X, Y)
        return loss.evaluate(Y, T)

    f(0.0)
    f0 = loss.evaluate(Y, T, dY)
    G.zeroEntries()
    net.backward(dY, None, G)
    G2 = G.duplicate()
    JP.multTranspose(dY, G2)  # the same gradient through the Mat
    G2.axpy(-1.0, G)
    check(G2.norm() <= 1e-14 * G.norm(), "J_theta^T dY is the gradient")
    h = 1e-5
    fd, exact = (f(h) - f(-h)) / (2 * h), G.dot(d)
    err = abs(fd - exact) / abs(exact)
    check(err < 1e-7, "finite differences: %g vs %g (relative %g)" % (fd, exact, err))
    PETSc.Sys.Print("gradient vs central differences (h 1e-5): relative error below 1e-7 (loss %.6f)" % f0)

    # the same Net in single precision: its output within 10 L u of double's (u = 2^-24, L layers)
    check(net.getPrecision() == "double", "double precision by default")
    net.setPrecision("single")
    Ys = Y.duplicate()
    f(0.0)
    net.forward(X, Ys)
    Ys.axpy(-1.0, Y)
    tol = 10 * net.getNumLayers() * 2.0**-24
    check(net.getPrecision() == "single" and Ys.norm() <= tol * Y.norm(), "single precision output within 10 L u of double")
    PETSc.Sys.Print("single precision: output within 10 L u of double")
    net.setPrecision("double")

    net.destroy()  # the Jacobian wrappers are emptied with it
    check(J.handle == 0 and JP.handle == 0 and net.handle == 0, "net.destroy() empties its Jacobians")
    PETSc.Sys.Print("jacobian: ok")


main()
