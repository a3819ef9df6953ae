! Fortran battery, `use mpi` style: point-to-point (statuses, MPI_STATUS_IGNORE), nonblocking completed with
! Waitany, Testsome and Waitall(MPI_STATUSES_IGNORE), collectives with MPI_IN_PLACE, a split communicator and a
! derived datatype.  Every line starts "r<rank>: " (tests compare them per rank); the last is "r<rank>: done".
program f_usempi
  use mpi
  implicit none
  integer :: ierr, rank, size, right, left, i, idx, outcount, sub, subrank, vec, total
  integer :: st(MPI_STATUS_SIZE), reqs(4), done_idx(4), sts(MPI_STATUS_SIZE, 4)
  integer :: val, got(4), buf(12), col(3), sums(4), outs(2), one(1)
  logical :: seen(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  ! blocking ring with a status, then with MPI_STATUS_IGNORE
  val = 100 + rank
  call MPI_Sendrecv(val, 1, MPI_INTEGER, right, 7, got(1), 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, st, ierr)
  write (*, '("r",I0,": sendrecv got ",I0," from ",I0," tag ",I0)') rank, got(1), st(MPI_SOURCE), st(MPI_TAG)
  if (rank == 0) call MPI_Send(val, 1, MPI_INTEGER, size - 1, 8, MPI_COMM_WORLD, ierr)
  if (rank == size - 1) then
    call MPI_Recv(got(2), 1, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    write (*, '("r",I0,": recv ignoring status got ",I0)') rank, got(2)
  end if

  ! nonblocking: Waitany over two receives and two sends
  do i = 1, 2
    call MPI_Irecv(got(i), 1, MPI_INTEGER, left, 10 + i, MPI_COMM_WORLD, reqs(i), ierr)
  end do
  do i = 1, 2
    outs(i) = val * i
    call MPI_Isend(outs(i), 1, MPI_INTEGER, right, 10 + i, MPI_COMM_WORLD, reqs(2 + i), ierr)
  end do
  seen = .false.
  do i = 1, 4
    call MPI_Waitany(4, reqs, idx, st, ierr)
    seen(idx) = .true.
  end do
  write (*, '("r",I0,": waitany got ",I0," ",I0," all seen ",L1)') rank, got(1), got(2), all(seen)

  ! Testsome until every request is done, then Waitall with MPI_STATUSES_IGNORE on null requests
  call MPI_Irecv(got(3), 1, MPI_INTEGER, left, 20, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(val + 1000, 1, MPI_INTEGER, right, 20, MPI_COMM_WORLD, reqs(2), ierr)
  total = 0
  do while (total < 2)
    call MPI_Testsome(2, reqs, outcount, done_idx, sts, ierr)
    if (outcount /= MPI_UNDEFINED) total = total + outcount
  end do
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  write (*, '("r",I0,": testsome got ",I0)') rank, got(3)

  ! collectives, MPI_IN_PLACE
  val = 0
  if (rank == 0) val = 42
  call MPI_Bcast(val, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  sums = [rank, 2 * rank, 3 * rank, 1]
  call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": bcast ",I0," allreduce in place ",4(I0,:," "))') rank, val, sums
  call MPI_Gather(rank * 3, 1, MPI_INTEGER, buf, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '("r",I0,": gather ",12(I0,:," "))') rank, buf(1:size)

  ! a communicator of even and odd ranks
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, sub, ierr)
  call MPI_Comm_rank(sub, subrank, ierr)
  one(1) = rank
  call MPI_Allreduce(one, total, 1, MPI_INTEGER, MPI_MAX, sub, ierr)
  write (*, '("r",I0,": split rank ",I0," max ",I0)') rank, subrank, total
  call MPI_Comm_free(sub, ierr)

  ! a derived datatype: one column of a 3x4 matrix stored by columns... sent as a strided row
  call MPI_Type_vector(3, 1, 4, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  buf = [(100 * rank + i, i = 1, 12)]
  col = -1
  call MPI_Sendrecv(buf(2), 1, vec, right, 30, col, 3, MPI_INTEGER, left, 30, MPI_COMM_WORLD, st, ierr)
  write (*, '("r",I0,": vector column ",3(I0,:," "))') rank, col
  call MPI_Type_free(vec, ierr)

  write (*, '("r",I0,": done")') rank
  call MPI_Finalize(ierr)
end program f_usempi
