"""An exception left uncaught: a bad layer spec from the options (-net_layers) ends the program with petnet.Error
and PETSc's message (python_spec_error)."""
from common import petnet, comm

net = petnet.Net().create(comm, input_shape=(4,))
net.setFromOptions()
