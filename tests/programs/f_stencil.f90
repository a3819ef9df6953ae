! Fortran battery, `include 'mpif.h'` style: a Jacobi stencil on a 2-D grid split by rows over a periodic-free
! Cartesian communicator, halos exchanged with MPI_Sendrecv of strided rows (an MPI_Type_vector), then with
! Irecv/Isend completed by MPI_Waitall into an array of statuses; the residual reduced with MPI_IN_PLACE.
! Every line starts "r<rank>: " (tests compare them per rank); the last is "r<rank>: done".
program f_stencil
  implicit none
  include 'mpif.h'
  integer, parameter :: nx = 8, ny = 6, iters = 20
  double precision :: u(0:nx + 1, 0:ny + 1), unew(nx, ny), resid, total
  integer :: ierr, rank, size, cart, up, down, row, it, i, j
  integer :: dims(1), coords(1), reqs(4), stats(MPI_STATUS_SIZE, 4), st(MPI_STATUS_SIZE)
  logical :: periods(1)

  call MPI_INIT(ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  dims(1) = size
  periods(1) = .false.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, dims, periods, .true., cart, ierr)
  call MPI_COMM_RANK(cart, rank, ierr)
  call MPI_CART_COORDS(cart, rank, 1, coords, ierr)
  call MPI_CART_SHIFT(cart, 0, 1, up, down, ierr)
  write (*, '("r",I0,": coords ",I0," up ",I0," down ",I0)') rank, coords(1), up, down

  ! a row of the local block is strided in Fortran's column-major order: one element every nx + 2
  call MPI_TYPE_VECTOR(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, row, ierr)
  call MPI_TYPE_COMMIT(row, ierr)

  u = 0d0
  do j = 1, ny
    do i = 1, nx
      u(i, j) = dble(rank * nx + i) + 0.5d0 * j
    end do
  end do
  if (coords(1) == 0) u(0, :) = 10d0

  do it = 1, iters
    if (mod(it, 2) == 1) then
      call MPI_SENDRECV(u(nx, 1), 1, row, down, 1, u(0, 1), 1, row, up, 1, cart, st, ierr)
      call MPI_SENDRECV(u(1, 1), 1, row, up, 2, u(nx + 1, 1), 1, row, down, 2, cart, st, ierr)
    else
      call MPI_IRECV(u(0, 1), 1, row, up, 3, cart, reqs(1), ierr)
      call MPI_IRECV(u(nx + 1, 1), 1, row, down, 4, cart, reqs(2), ierr)
      call MPI_ISEND(u(nx, 1), 1, row, down, 3, cart, reqs(3), ierr)
      call MPI_ISEND(u(1, 1), 1, row, up, 4, cart, reqs(4), ierr)
      call MPI_WAITALL(4, reqs, stats, ierr)
      if (it == iters) then
        write (*, '("r",I0,": halo sources ",I0," ",I0," tags ",I0," ",I0)') rank, stats(MPI_SOURCE, 1), &
          stats(MPI_SOURCE, 2), stats(MPI_TAG, 1), stats(MPI_TAG, 2)
      end if
    end if
    if (coords(1) == 0) u(0, :) = 10d0
    resid = 0d0
    do j = 1, ny
      do i = 1, nx
        unew(i, j) = 0.25d0 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        resid = resid + (unew(i, j) - u(i, j))**2
      end do
    end do
    u(1:nx, 1:ny) = unew
    call MPI_ALLREDUCE(MPI_IN_PLACE, resid, 1, MPI_DOUBLE_PRECISION, MPI_SUM, cart, ierr)
    if (mod(it, 5) == 0) write (*, '("r",I0,": iteration ",I0," residual ",ES14.7)') rank, it, sqrt(resid)
  end do

  total = sum(u(1:nx, 1:ny))
  call MPI_REDUCE(total, resid, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, cart, ierr)
  if (rank == 0) write (*, '("r",I0,": sum of the grid ",F0.6)') rank, resid
  ! mpif.h has no interfaces: gfortran >= 10 wants one type per buffer argument in a file, as here
  total = rank
  resid = -1d0
  call MPI_SENDRECV(total, 1, MPI_DOUBLE_PRECISION, down, 9, resid, 1, MPI_DOUBLE_PRECISION, up, 9, cart, &
                    MPI_STATUS_IGNORE, ierr)
  write (*, '("r",I0,": from up ",F0.1)') rank, resid
  call MPI_TYPE_FREE(row, ierr)
  call MPI_COMM_FREE(cart, ierr)
  write (*, '("r",I0,": done")') rank
  call MPI_FINALIZE(ierr)
end program f_stencil
