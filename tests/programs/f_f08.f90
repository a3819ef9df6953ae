! Fortran battery, `use mpi_f08` style: typed handles and statuses, optional ierror.  Point-to-point with
! MPI_Get_count and MPI_STATUS_IGNORE, MPI_Iprobe polling, nonblocking completed with Waitany, Test (a LOGICAL
! flag) and Testsome, Waitall(MPI_STATUSES_IGNORE), collectives with MPI_IN_PLACE, Alltoall, a split
! communicator and a subarray datatype.  Every line starts "r<rank>: "; the last is "r<rank>: done".
program f_f08
  use mpi_f08
  implicit none
  integer :: rank, size, right, left, i, idx, outcount, total, n, subrank, val
  integer :: got(4), outs(2), sums(3), grid(4, 4), block(2, 2), ato(8), afrom(8), done_idx(2), one, most
  type(MPI_Status) :: st, sts(2)
  type(MPI_Request) :: reqs(4)
  type(MPI_Comm) :: sub
  type(MPI_Datatype) :: corner
  logical :: flag
  double precision :: x(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  ! blocking: a status read through its fields, a count, then MPI_STATUS_IGNORE
  x = [1d0, 2d0, 3d0] * (rank + 1)
  call MPI_Send(x, 3, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD)
  x = 0
  call MPI_Recv(x, 3, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_DOUBLE_PRECISION, n)
  write (*, '("r",I0,": recv ",3(F0.1,:," ")," from ",I0," tag ",I0," count ",I0)') rank, x, st%MPI_SOURCE, &
    st%MPI_TAG, n
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 6, val, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE)
  write (*, '("r",I0,": sendrecv ignoring status got ",I0)') rank, val

  ! a message polled for with MPI_Iprobe, then received
  call MPI_Send(rank * 10, 1, MPI_INTEGER, right, 7, MPI_COMM_WORLD)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 7, MPI_COMM_WORLD, flag, st)
  end do
  call MPI_Recv(val, 1, MPI_INTEGER, st%MPI_SOURCE, st%MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  write (*, '("r",I0,": probed from ",I0," got ",I0)') rank, st%MPI_SOURCE, val

  ! nonblocking: Waitany over two receives and two sends
  do i = 1, 2
    call MPI_Irecv(got(i), 1, MPI_INTEGER, left, 10 + i, MPI_COMM_WORLD, reqs(i))
  end do
  do i = 1, 2
    outs(i) = 100 * rank + i
    call MPI_Isend(outs(i), 1, MPI_INTEGER, right, 10 + i, MPI_COMM_WORLD, reqs(2 + i))
  end do
  ! the indices are printed, not used: MPICH 4.0.2's mpi_f08 returns them counted from 0 (its `use mpi`, from 1)
  total = 0
  do i = 1, 4
    call MPI_Waitany(4, reqs, idx, st)
    total = total + idx
  end do
  write (*, '("r",I0,": waitany got ",I0," ",I0," sum of indices ",I0)') rank, got(1), got(2), total

  ! MPI_Test's LOGICAL flag until a receive completes, then Testsome, then Waitall on null requests
  call MPI_Irecv(got(3), 1, MPI_INTEGER, left, 20, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(outs(1), 1, MPI_INTEGER, right, 20, MPI_COMM_WORLD, reqs(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st)
  end do
  write (*, '("r",I0,": test got ",I0," from ",I0," null ",L1)') rank, got(3), st%MPI_SOURCE, &
    reqs(1) == MPI_REQUEST_NULL
  total = 0
  do while (total < 1)
    call MPI_Testsome(2, reqs, outcount, done_idx, sts)
    if (outcount /= MPI_UNDEFINED) total = total + outcount
  end do
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)

  ! collectives
  sums = [rank, 10 * rank, 1]
  call MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  ato = [(1000 * rank + i, i = 1, 8)]
  call MPI_Alltoall(ato, 1, MPI_INTEGER, afrom, 1, MPI_INTEGER, MPI_COMM_WORLD)
  write (*, '("r",I0,": allreduce in place ",3(I0,:," ")," alltoall ",8(I0,:," "))') rank, sums, afrom(1:size)
  most = rank
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, most, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD)
    write (*, '("r",I0,": reduce in place max ",I0)') rank, most
  else
    call MPI_Reduce(most, val, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD)
  end if

  ! a communicator per parity
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, sub)
  call MPI_Comm_rank(sub, subrank)
  one = 1
  call MPI_Allreduce(one, n, 1, MPI_INTEGER, MPI_SUM, sub)
  write (*, '("r",I0,": split rank ",I0," of ",I0)') rank, subrank, n
  call MPI_Comm_free(sub)

  ! a 2x2 corner of a 4x4 grid, sent as one subarray datatype
  grid = reshape([(100 * rank + i, i = 1, 16)], [4, 4])
  call MPI_Type_create_subarray(2, [4, 4], [2, 2], [1, 2], MPI_ORDER_FORTRAN, MPI_INTEGER, corner)
  call MPI_Type_commit(corner)
  call MPI_Sendrecv(grid, 1, corner, right, 30, block, 4, MPI_INTEGER, left, 30, MPI_COMM_WORLD, st)
  write (*, '("r",I0,": subarray ",4(I0,:," "))') rank, block
  call MPI_Type_free(corner)

  write (*, '("r",I0,": done")') rank
  call MPI_Finalize()
end program f_f08
